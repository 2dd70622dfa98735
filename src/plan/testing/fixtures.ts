import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { architectureFromConfig, type Architecture } from "../architecture.js";
import type { ModelFacts } from "../model-facts.js";
import { inventoryFacts } from "../inventory-facts.js";

export const fixturesFolder = fileURLToPath(new URL("../fixtures/", import.meta.url));

export function fixtureConfig(name: string): unknown {
  return JSON.parse(readFileSync(`${fixturesFolder}${name}/config.json`, "utf8"));
}

export function fixtureArchitecture(name: string): Architecture {
  return architectureFromConfig(fixtureConfig(name), `fixtures/${name}/config.json`);
}

/**
 * Facts for a fixture as a bf16 safetensors checkpoint would give them, for
 * tests of the pure arithmetic (the readers have their own tests).
 */
export function fixtureFacts(name: string): ModelFacts {
  return inventoryFacts(name, fixtureArchitecture(name), `fixtures/${name}/config.json`);
}

/**
 * Facts for a fixture as its published pre-quantised checkpoint gives them
 * (DeepSeek-V3's FP8 safetensors): priced at the stored bytes, as the
 * planner prices any checkpoint with a quantization_config.
 */
export function storedFixtureFacts(name: string, quantization: "fp8", storedBytes: number): ModelFacts {
  const facts = fixtureFacts(name);
  return { ...facts, checkpoint: { format: "safetensors", dtype: "F8_E4M3", bytes: storedBytes, quantization } };
}
