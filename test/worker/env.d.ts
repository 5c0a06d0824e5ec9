/** Types `env` / `exports` from "cloudflare:workers" in the Worker tests with the app's own bindings. */
import type { Env as AppEnv } from "../../src/worker/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends AppEnv {}
  }
}
