/** The agent folder's face: what other folders of src/ use from it. */
export { type AgentOptions, startAgent } from "./agent.js";
export { watchParentLifeline } from "./parent-lifeline.js";
export { isPortFree, isProcessAlive, stopProcessGroup } from "./engine-process.js";
export { selectHubFiles } from "./weights-source.js";
