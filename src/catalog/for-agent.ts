/** The catalog folder's face for `llmgw agent` (and the HTTP plumbing of its control API): only the names the agent uses, so that its start does not load the whole folder through index.ts. */
export { type WeightsSource, parseWeightsSource } from "./weights-source.js";
export { defaultServerLimits, formatBytes } from "./server-limits.js";
export { describeIssues, parseWithSchema } from "./schema-errors.js";
export { parseListen } from "./server-config.js";
export { redactArgs, redactUrl } from "./redact.js";
