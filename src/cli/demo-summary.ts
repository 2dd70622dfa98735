import path from "node:path";
import { demoChatModel, type RunningDemo } from "../demo/index.js";
import type { NodeView, ReplicaView } from "../protocol/index.js";
import { gatewayTryLines } from "./gateway-try-lines.js";
import { imageToMeshLine } from "./image-to-mesh-line.js";
import { renderTable } from "./output.js";

/** What the summary reads of a running demo. */
export type DemoFacts = Pick<RunningDemo, "url" | "token" | "dataDir" | "sampleImage"> & {
  readonly replicas: readonly Pick<ReplicaView, "id" | "model" | "node" | "gpus" | "engine" | "endpoint">[];
  /** With --large: the model over several nodes its printed lines add. */
  readonly largeModel?: string | undefined;
  /** The nodes, to say which replicas answer for real (a node that is not simulated); every node is simulated when absent. */
  readonly nodes?: readonly Pick<NodeView, "name" | "simulated">[];
  /** The model `--gguf` added: the printed lines talk to it, since it answers for real. */
  readonly ggufModel?: string | undefined;
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
  const first = demo.replicas.find((replica) => replica.model === (demo.ggufModel ?? demoChatModel)) ?? demo.replicas[0];
  const real = new Set((demo.nodes ?? []).filter((node) => !node.simulated).map((node) => node.name));
  const replicaRows = demo.replicas.map((replica) => [
    replica.model,
    replica.node,
    replica.gpus.length > 0 ? `cards ${replica.gpus.join(",")}` : "CPU",
    replica.engine,
    replica.endpoint ?? "-",
    real.has(replica.node) ? "for real (llama.cpp)" : "simulated",
  ]);
  const steps: [shows: string, ...commands: string[]][] = [
    ["Point llmgw ctl at this demo:", `export LLMGW_SERVER=${demo.url} LLMGW_TOKEN=${demo.token}`],
    ["What runs where: the simulated machines and their cards, the catalog, the replicas:", `${llmgw} ctl nodes`, `${llmgw} ctl models`, `${llmgw} ctl replicas`],
    ...(first ? [["An engine's log:", `${llmgw} ctl logs ${first.id}`] as [string, string]] : []),
    // First of the models to add: the lines below may take cards of the large nodes, and the gang needs both whole.
    ...(demo.largeModel !== undefined
      ? [
          [
            "DeepSeek-V3 (671B, 688.6 GB of FP8 weights) as one replica over both 8× H100 nodes: add it, see its members by rank, ask it:",
            `${llmgw} ctl model add ${demo.largeModel} --wait`,
            `${llmgw} ctl replicas --model ${demo.largeModel}`,
            `curl -s ${demo.url}/v1/chat/completions -H 'content-type: application/json' -d '{"model": "${demo.largeModel}", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}'`,
          ] as [string, ...string[]],
        ]
      : []),
    // Before the lines that add models: they fill every card, and a surge restart needs one free beside the old replica.
    ["A new replica beside the old, then the old drains:", `${llmgw} ctl restart --model llama-3.1-8b --wait`],
    ["Every preset (what it needs, its licence, where it would run); add one, and the reconciler places it:", `${llmgw} ctl model presets`, `${llmgw} ctl model add qwen2.5-14b-instruct`],
    ["Plan a source, take the best fit, wait until it answers:", `${llmgw} ctl model serve Qwen/Qwen2.5-14B-Instruct --name chat-14b --wait`],
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
    // After the cards are full: placement then takes the model's CPU profile, which is the point to see.
    ["A second replica, placed by itself (on CPU once the cards are taken):", `${llmgw} ctl scale qwen2.5-7b-instruct --min 2`],
    // Last: it follows until Ctrl-C.
    ["What the reconciler does (placed, started, ready, draining, stopped), until Ctrl-C:", `${llmgw} ctl events --follow`],
  ];
  return [
    "",
    real.size > 0
      ? `Replicas, placed by the reconciler (on ${[...real].join(", ")} llama.cpp answers for real on this machine's CPU; on the simulated nodes the engine is llmgw's simulated one, timed from the planner's arithmetic for that card; each wants its replica key, which only the gateway holds):`
      : "Replicas, placed by the reconciler (the engine is llmgw's simulated one, timed from the planner's arithmetic for that card; each wants its replica key, which only the gateway holds):",
    renderTable(["MODEL", "NODE", "ON", "ENGINE", "ENDPOINT", "ANSWERS"], replicaRows).replace(/^/gm, "  "),
    "",
    ...checks,
    "",
    "Try, in another terminal:",
    ...steps.flatMap(([shows, ...commands]) => [`  ${shows}`, ...commands.map((command) => `    ${command}`)]),
    "",
    `The OpenAI-compatible gateway (open: no key on this loopback demo) streams from the replicas at ${demo.url}/v1:`,
    ...(first ? gatewayTryLines(demo.url, first.model) : []),
    "",
    "The web console, logged in by this link (the token after # stays in the browser: it is never sent to the server, nor logged):",
    `  ${consoleLoginLink(demo.url, demo.token)}`,
    "",
    "Ctrl-C stops the replicas, the agents and the server.",
  ].join("\n");
}

/** The console's address with the token in the fragment, which browsers never send: the page reads it, keeps it in session storage and clears it from the address bar. */
export function consoleLoginLink(url: string, token: string): string {
  return `${url}/#token=${encodeURIComponent(token)}`;
}
