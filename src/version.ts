/** The product version MCP servers announce in `serverInfo` (kept equal to package.json and wrangler.toml's APP_VERSION by test/unit/version.test.ts). */
export const APP_VERSION = "0.1.0";
