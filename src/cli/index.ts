/**
 * The cli folder's face. No folder imports the CLI (bin/llmgw.js runs
 * cli/launch.ts); the command tree is what the generated references and the
 * completion scripts read.
 */
export { buildProgram } from "./program.js";
