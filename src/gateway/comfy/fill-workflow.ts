import { splitInputPath, type ComfyInputName } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import type { RoutingComfy } from "../../protocol/index.js";

export type ComfyWorkflowNodes = RoutingComfy["workflow"];

/** The values one request puts into a workflow, by the names the catalog maps to places. */
export type ComfyValues = Partial<Record<ComfyInputName, string | number>>;

/**
 * A copy of the model's workflow with the request's values written where the
 * catalog says each goes. The stored workflow is never changed: it is shared
 * by every request. A value the workflow has no place for is refused rather
 * than dropped (an image asked for at 512x512 that comes back at 1024x1024
 * is a silent wrong answer), except the seed, which the gateway chooses itself
 * when the workflow takes one.
 */
export function fillWorkflow(modelName: string, comfy: RoutingComfy, values: ComfyValues): ComfyWorkflowNodes {
  const workflow = structuredClone(comfy.workflow);
  for (const [name, value] of Object.entries(values) as [ComfyInputName, string | number | undefined][]) {
    if (value === undefined) continue;
    const placeText = comfy.inputs[name];
    if (placeText === undefined) {
      if (name === "seed") continue;
      throw new DomainError(
        "invalid_input",
        `model ${modelName}'s workflow has no place for ${describe(name)}`,
        `Leave ${requestField(name)} out for this model (its workflow takes: ${Object.keys(comfy.inputs).join(", ") || "nothing"}).`,
      );
    }
    const place = splitInputPath(placeText);
    const node = place === undefined ? undefined : workflow[place.node];
    if (place === undefined || node === undefined) {
      // The catalog checked the path when the model was added; a table from another release may differ.
      throw new DomainError("invalid_input", `model ${modelName}'s ${name} input points at ${placeText}, which its workflow does not have`, "Correct the model's comfy.inputs (`llmgw ctl model add -f` with the fixed entry).");
    }
    node.inputs[place.field] = value;
  }
  return workflow;
}

function describe(name: ComfyInputName): string {
  switch (name) {
    case "width":
    case "height":
      return "a size";
    case "batch":
      return "more than one image per run";
    case "image":
      return "an input image";
    default:
      return `a ${name}`;
  }
}

function requestField(name: ComfyInputName): string {
  if (name === "width" || name === "height") return "size";
  if (name === "batch") return "n";
  return name;
}
