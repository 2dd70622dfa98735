/** The fleet folder's face for the engine processes (`llmgw sim-engine`, `llmgw llama-engine`), started for every replica: only the names the engines use, so that starting one does not load the whole folder through index.ts. */
export { cardClassInfo, unknownClassBandwidthGBps } from "./card-classes.js";
