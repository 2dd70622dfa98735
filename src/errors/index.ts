/** The errors folder's face: what other folders of src/ use from it. */
export { didYouMean } from "./did-you-mean.js";
export { EngineCannotRun, ExternalKeyMissing, AdaptersUnsupported, EngineArgumentsInvalid } from "./engine-errors.js";
export { listenFailure } from "./listen-failure.js";
export { DeclaredInFile, ModelNotFound } from "./model-errors.js";
export * from "./light.js";
export { errorCodes } from "./codes.js";
