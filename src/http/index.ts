/** The http folder's face: what other folders of src/ use from it. */
export { answerClientError, answerFrameworkError, installErrorHandling, segmentTooLong, clientErrorAnswerer } from "./error-handler.js";
export { maxParamLength } from "./router-limits.js";
