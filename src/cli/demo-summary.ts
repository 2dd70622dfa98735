import path from "node:path";
import { demoChatModel } from "../demo/demo-catalog.js";
import type { RunningDemo } from "../demo/run-demo.js";
import type { ReplicaView } from "../protocol/views.js";
import { gatewayTryLines } from "./gateway-try-lines.js";
import { imageToMeshLine } from "./image-to-mesh-line.js";
import { renderTable } from "./output.js";

/** What the summary reads of a running demo. */
export type DemoFacts = Pick<RunningDemo, "url" | "token" | "dataDir" | "sampleImage"> & {
  readonly replicas: readonly Pick<ReplicaView, "id" | "model" | "node" | "gpus" | "engine" | "endpoint">[];
};

/**
 * What the demo prints once every replica answered: where each runs, the
 * answers, and what to try next. Each thing to try is said in plain words on
 * a line of its own, with the lines to paste below it, never as a trailing
 * `# comment`: zsh (macOS's shell) reads `#` as a comment only with
 * `setopt interactivecomments`, so a pasted `llmgw ctl nodes  # the ...`
 * hands `#`, `the`, ... to llmgw as arguments and fails. `llmgw` is how the
 * person started it (`npx llmgw` in a clone), so every line runs as printed.
 */
export function demoSummary(demo: DemoFacts, checks: readonly string[], llmgw: string): string {
  const first = demo.replicas.find((replica) => replica.model === demoChatModel) ?? demo.replicas[0];
  const replicaRows = demo.replicas.map((replica) => [
    replica.model,
    replica.node,
    replica.gpus.length > 0 ? `cards ${replica.gpus.join(",")}` : "CPU",
    replica.engine,
    replica.endpoint ?? "-",
  ]);
  const steps: [shows: string, ...commands: string[]][] = [
    ["Point llmgw ctl at this demo:", `export LLMGW_SERVER=${demo.url} LLMGW_TOKEN=${demo.token}`],
    ["What runs where: the simulated machines and their cards, the catalog, the replicas:", `${llmgw} ctl nodes`, `${llmgw} ctl models`, `${llmgw} ctl replicas`],
    ...(first ? [["An engine's log:", `${llmgw} ctl logs ${first.id}`] as [string, string]] : []),
    ["Every preset (what it needs, its licence, where it would run); add one, and the reconciler places it:", `${llmgw} ctl model presets`, `${llmgw} ctl model add qwen2.5-14b-instruct`],
    ["Plan a source, take the best fit, wait until it answers:", `${llmgw} ctl model serve Qwen/Qwen2.5-14B-Instruct --name chat-14b`],
    ["Whether a 70B fits this fleet (read from the demo's stand-in hub):", `${llmgw} ctl model plan meta-llama/Llama-3.3-70B-Instruct`],
    // Not added at start: each ComfyUI model holds a card, and the demo starts as fast without them.
    // --wait, so that the request pasted with it finds the model ready.
    [
      "Text to image through ComfyUI (simulated here): add the model, then ask it:",
      `${llmgw} ctl model add flux1-schnell --wait`,
      `curl -s ${demo.url}/v1/images/generations -H 'content-type: application/json' -d '{"model": "flux1-schnell", "prompt": "a red fox in the snow", "size": "256x256"}'`,
    ],
    [
      "Image to 3D mesh: add the model, then turn the demo's chair.png into chair.glb beside it:",
      `${llmgw} ctl model add hunyuan3d-2 --wait`,
      // The mesh goes beside the image, in the demo's folder: the line then works pasted in any folder
      // (one the user cannot write to included) and never overwrites a chair.glb of theirs.
      imageToMeshLine(demo.url, "hunyuan3d-2", demo.sampleImage, path.join(demo.dataDir, "chair.glb")),
    ],
    ["A second replica, placed by itself:", `${llmgw} ctl scale qwen2.5-7b-instruct --min 2`],
    ["A new replica beside the old, then the old drains:", `${llmgw} ctl restart --model llama-3.1-8b --wait`],
    // Last: it follows until Ctrl-C.
    ["What the reconciler does (placed, started, ready, draining, stopped), until Ctrl-C:", `${llmgw} ctl events --follow`],
  ];
  return [
    "",
    "Replicas, placed by the reconciler (the engine is llmgw's simulated one, timed from the planner's arithmetic for that card; each wants its replica key, which only the gateway holds):",
    renderTable(["MODEL", "NODE", "ON", "ENGINE", "ENDPOINT"], replicaRows).replace(/^/gm, "  "),
    "",
    ...checks,
    "",
    "Try, in another terminal:",
    ...steps.flatMap(([shows, ...commands]) => [`  ${shows}`, ...commands.map((command) => `    ${command}`)]),
    "",
    `The OpenAI-compatible gateway (open: no key on this loopback demo) streams from the replicas at ${demo.url}/v1:`,
    ...(first ? gatewayTryLines(demo.url, first.model) : []),
    "",
    "Ctrl-C stops the replicas, the agents and the server.",
  ].join("\n");
}
