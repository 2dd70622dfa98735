/** The errors folder's face for `llmgw agent` (and the HTTP plumbing of its control API): only the names the agent uses, so that its start does not load the whole folder through index.ts. */
export type { DomainError } from "./domain-error.js";
export { listenFailure } from "./listen-failure.js";
