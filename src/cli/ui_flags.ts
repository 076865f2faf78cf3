/**
 * The flags of `stepflow ui`, declared once (the dashboard's command and shell completion read
 * them; kept out of `ui.ts`, the package's `./ui` entry point, so they stay internal).
 *
 * @module
 */
import { BACKEND_FLAGS } from "./kit/backend.ts";
import { defineFlags, portFlag } from "./kit/flags.ts";

/** The dashboard's port when `--port` is not given. */
export const DEFAULT_PORT = 8420;

/**
 * Every flag of `ui`: the type and parser of its flags follow from it. Its help (`USAGE` in `ui.ts`)
 * groups the backend flags on one line, so it is written out rather than generated.
 */
export const UI_FLAGS = defineFlags({
  store: { type: "string", value: "STORE", description: "run store to show" },
  plans: { type: "string", value: "DIR", description: "folder of tool plans" },
  port: {
    type: "string",
    value: "N",
    description: "port",
    parse: (raw) => portFlag({ port: raw }, DEFAULT_PORT),
    default: DEFAULT_PORT,
  },
  host: { type: "string", value: "H", description: "interface to bind", default: "127.0.0.1" },
  open: { type: "boolean", description: "open the dashboard in the browser" },
  allowActions: { type: "boolean", description: "let run pages act on runs" },
  // The dashboard's buttons pass these to run-agent; how often a call is retried is not one of them.
  backend: BACKEND_FLAGS.backend,
  model: BACKEND_FLAGS.model,
  script: BACKEND_FLAGS.script,
  help: { type: "boolean", short: "h", description: "show this help" },
});
