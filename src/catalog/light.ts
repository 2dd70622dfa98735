/** The catalog folder's face: what other folders of src/ use from it. */
export { parseDuration } from "./duration-text.js";
export { mostRequestsPerKey } from "./limit-bounds.js";
export { engineNames, type EngineName, modelClasses, type ModelClass, usageSyncs, type UsageSync } from "./names.js";
export { defaultDataDir, defaultListen } from "./server-defaults.js";
