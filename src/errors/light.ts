/** The errors folder's light face: the error type itself, for the CLI's start (the main face also loads the spelling suggester's package). */
export type { ErrorCode } from "./codes.js";
export { DomainError, isDomainError, type ErrorDetail } from "./domain-error.js";
