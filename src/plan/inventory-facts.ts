import type { Architecture } from "./architecture.js";
import type { ModelFacts } from "./model-facts.js";
import { inventoryParameters, tensorInventory } from "./tensor-inventory.js";

/**
 * The facts a bf16 safetensors checkpoint of this architecture would give,
 * counted from the tensors the architecture implies. For the arithmetic's
 * tests and the benchmark, where a config.json is known but no weights are.
 */
export function inventoryFacts(source: string, architecture: Architecture, architectureFrom: string): ModelFacts {
  const parameters = inventoryParameters(tensorInventory(architecture));
  return {
    source,
    architecture,
    parameters,
    checkpoint: { format: "safetensors", dtype: "BF16", bytes: parameters * 2, quantization: undefined },
    ggufFileType: undefined,
    provenance: { architecture: architectureFrom, parameters: "tensor inventory" },
  };
}
