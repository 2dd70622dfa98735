/** The catalog folder's light face: names and defaults the CLI needs to build its command tree, loading no schema library or YAML parser. */
export { parseDuration } from "./duration-text.js";
export { mostRequestsPerKey } from "./limit-bounds.js";
export { engineNames, type EngineName, modelClasses, type ModelClass, usageSyncs, type UsageSync } from "./names.js";
export { defaultDataDir, defaultListen } from "./server-defaults.js";
