/** The errors folder's face: what other folders of src/ use from it. */
export { type ErrorCode, errorCodes } from "./codes.js";
export { didYouMean } from "./did-you-mean.js";
export { DomainError, isDomainError, type ErrorDetail } from "./domain-error.js";
export { EngineCannotRun, ExternalKeyMissing, AdaptersUnsupported, EngineArgumentsInvalid } from "./engine-errors.js";
export { listenFailure } from "./listen-failure.js";
export { DeclaredInFile, ModelNotFound } from "./model-errors.js";
