/**
 * The built-in llama.cpp engine's face: `llmgw llama-engine` enters here, loading that
 * engine and not the drivers or the simulator.
 */
export { runLlamaEngine } from "./llama/llama-engine.js";
