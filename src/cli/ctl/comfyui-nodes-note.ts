import type { ModelView, NodeView } from "../../protocol/index.js";

/**
 * For a ComfyUI model just added: which nodes have ComfyUI, which will install
 * it when the model is first placed there (the agent's --comfyui-install),
 * and which can run neither. An install takes minutes, so the person adding
 * the model is told before the first replica seems slow to start. Empty for
 * other models.
 */
export function comfyuiNodesNote(model: ModelView, nodes: readonly NodeView[]): string {
  if (!model.profiles.some((profile) => profile.engine === "comfyui")) return "";
  const live = nodes.filter((node) => node.state !== "lost");
  const present = live.filter((node) => node.comfyui?.present === true || (node.comfyui == null && node.engines.includes("comfyui")));
  const installs = live.filter((node) => node.comfyui?.present === false && node.comfyui.installable);
  const missing = live.filter((node) => !present.includes(node) && !installs.includes(node));
  const lines: string[] = [];
  if (present.length > 0) lines.push(`ComfyUI is on ${present.map((node) => node.name).join(", ")}.`);
  if (installs.length > 0) lines.push(`ComfyUI will be installed (the agent's --comfyui-install) on ${installs.map((node) => node.name).join(", ")} when ${model.name} is first placed there; that start takes minutes longer.`);
  if (missing.length > 0) lines.push(`No ComfyUI on ${missing.map((node) => node.name).join(", ")}: start their agents with --engine-path comfyui=PATH or --comfyui-install "COMMAND" to run ${model.name} there.`);
  if (present.length === 0 && installs.length === 0) lines.push(`No node can run ${model.name} yet.`);
  return lines.join("\n");
}
