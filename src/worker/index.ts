/**
 * Worker entry: wiring only.
 */
import { createApp } from "./app.ts";

export default createApp();
