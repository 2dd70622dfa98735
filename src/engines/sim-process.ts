/**
 * The simulated engine's face: `llmgw sim-engine` (started for every simulated replica,
 * the demo and most tests) and the demo's sample image enter here, loading the simulator
 * and not the drivers or the built-in llama.cpp.
 */
export { runSimEngine } from "./sim/run-sim-engine.js";
export { simulatedPng } from "./sim/sim-images.js";
