/**
 * Tool-file source the sandbox race suites share (sandbox-race, sandbox-path-race): libuv's pool
 * held on a FIFO, and the race itself — a file call started while `OUT/cur` is the real directory,
 * then the directory whose entries link out of the jail put in its place before the pool opens
 * anything. `__OUT__` is replaced with the jail's `out` directory (JSON).
 */
export const RACE_HELPERS = `
const fs = require("node:fs");
const OUT = __OUT__;
/**
 * Holds libuv's four pool threads, each waiting to open the FIFO for reading: a file call queued
 * after them runs only once \`release\` opens its writing end.
 */
function holdPool() {
  const readers = [];
  for (let i = 0; i < 4; i++) readers.push(new Promise((resolve) => fs.open(OUT + "/fifo", "r", (error, fd) => resolve(fd))));
  return async () => {
    const writer = fs.openSync(OUT + "/fifo", "w");
    for (const fd of await Promise.all(readers)) if (fd !== undefined) fs.closeSync(fd);
    fs.closeSync(writer);
  };
}
/**
 * Starts a file call on OUT/cur/… while cur is a real directory (what the broker checks), then,
 * before the pool opens anything, puts the directory whose entries link out of the jail in its place.
 */
async function race(start) {
  fs.renameSync(OUT + "/real", OUT + "/cur");
  const release = holdPool();
  let pending;
  try {
    pending = start();
  } finally {
    fs.renameSync(OUT + "/cur", OUT + "/real");
    fs.renameSync(OUT + "/trap", OUT + "/cur");
  }
  const outcome = Promise.resolve(pending).then((value) => ({ value }), (error) => ({ error }));
  await release();
  const { value, error } = await outcome;
  fs.renameSync(OUT + "/cur", OUT + "/trap");
  if (error) throw error;
  return value;
}
const callback = (call) => new Promise((resolve, reject) => call((error, value) => (error ? reject(error) : resolve(value))));
`;
