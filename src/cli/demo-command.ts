import path from "node:path";
import type { Command } from "commander";
import { request } from "undici";
import { z } from "zod";
import { shippedPresets } from "../catalog/presets/shipped-presets.js";
import { demoChatModel } from "../demo/demo-catalog.js";
import { runDemo, type RunningDemo } from "../demo/run-demo.js";
import { imageToMeshLine } from "./image-to-mesh-line.js";
import { printedLlmgwCommand } from "./invocation.js";
import { print, renderTable } from "./output.js";

const chatAnswer = z.object({ choices: z.array(z.object({ message: z.object({ content: z.string() }) })).min(1) });
const completionAnswer = z.object({ choices: z.array(z.object({ text: z.string() })).min(1) });
const embeddingAnswer = z.object({ data: z.array(z.object({ embedding: z.array(z.number()) })).min(1) });

/** How each model is asked, by its preset's first task: a chat model is chatted with, an embedding model embeds. */
const questions = {
  chat: {
    path: "/v1/chat/completions",
    body: (model: string) => ({ model, messages: [{ role: "user", content: "Hello from llmgw demo" }], max_tokens: 16 }),
    answer: (body: unknown) => chatAnswer.parse(body).choices[0]?.message.content ?? "",
  },
  completions: {
    path: "/v1/completions",
    body: (model: string) => ({ model, prompt: "Hello from llmgw demo", max_tokens: 16 }),
    answer: (body: unknown) => completionAnswer.parse(body).choices[0]?.text ?? "",
  },
  embeddings: {
    path: "/v1/embeddings",
    body: (model: string) => ({ model, input: "Hello from llmgw demo" }),
    answer: (body: unknown) => `an embedding of ${embeddingAnswer.parse(body).data[0]?.embedding.length ?? 0} numbers`,
  },
} as const;

/** One real request through the gateway's /v1, as proof the whole path answers. */
async function askGateway(url: string, model: string): Promise<string> {
  const task = shippedPresets().find((preset) => preset.name === model)?.preset.tasks[0];
  const question = task === "completions" || task === "embeddings" ? questions[task] : questions.chat;
  const response = await request(`${url}${question.path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(question.body(model)),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const body: unknown = await response.body.json();
  if (response.statusCode !== 200) return `HTTP ${response.statusCode}: ${JSON.stringify(body).slice(0, 200)}`;
  return question.answer(body);
}

/**
 * Lines a newcomer pastes into another terminal: curl and the openai SDK
 * (Python and Node), streaming from the gateway's /v1, never a replica's own
 * port (whose engine wants its replica key).
 */
export function gatewayTryLines(url: string, model: string): string[] {
  const base = `${url}/v1`;
  return [
    `  curl -sN ${base}/chat/completions -H 'content-type: application/json' \\`,
    `       -d '{"model": "${model}", "stream": true, "messages": [{"role": "user", "content": "Hello"}]}'`,
    `  python3 -c "from openai import OpenAI; s = OpenAI(base_url='${base}', api_key='none').chat.completions.create(model='${model}', stream=True, messages=[{'role': 'user', 'content': 'Hello'}]); [print(c.choices[0].delta.content or '', end='', flush=True) for c in s if c.choices]; print()"`,
    `  node --input-type=module -e "import OpenAI from 'openai'; const s = await new OpenAI({ baseURL: '${base}', apiKey: 'none' }).chat.completions.create({ model: '${model}', stream: true, messages: [{ role: 'user', content: 'Hello' }] }); for await (const c of s) process.stdout.write(c.choices[0]?.delta?.content ?? ''); console.log()"`,
  ];
}

function summary(demo: RunningDemo, checks: readonly string[]): string {
  const llmgw = printedLlmgwCommand();
  const first = demo.replicas.find((replica) => replica.model === demoChatModel) ?? demo.replicas[0];
  const replicaRows = demo.replicas.map((replica) => [
    replica.model,
    replica.node,
    replica.gpus.length > 0 ? `cards ${replica.gpus.join(",")}` : "CPU",
    replica.engine,
    replica.endpoint ?? "-",
  ]);
  return [
    "",
    "Replicas, placed by the reconciler (the engine is llmgw's simulated one, timed from the planner's arithmetic for that card; each wants its replica key, which only the gateway holds):",
    renderTable(["MODEL", "NODE", "ON", "ENGINE", "ENDPOINT"], replicaRows).replace(/^/gm, "  "),
    "",
    ...checks,
    "",
    "Try, in another terminal:",
    `  export LLMGW_SERVER=${demo.url} LLMGW_TOKEN=${demo.token}`,
    `  ${llmgw} ctl nodes                 # the simulated machines and what runs on each card`,
    `  ${llmgw} ctl models                # the catalog, with state and replicas`,
    `  ${llmgw} ctl replicas`,
    `  ${llmgw} ctl model presets         # every preset: what it needs, its licence, where it would run`,
    `  ${llmgw} ctl model add qwen2.5-14b-instruct   # add one; the reconciler places it`,
    `  ${llmgw} ctl model serve Qwen/Qwen2.5-14B-Instruct --name chat-14b   # plan a source, take the best fit, wait until it answers`,
    // Not added at start: each ComfyUI model holds a card, and the demo starts as fast without them.
    `  ${llmgw} ctl model add flux1-schnell   # text to image through ComfyUI (simulated here), then:`,
    `    curl -s ${demo.url}/v1/images/generations -H 'content-type: application/json' -d '{"model": "flux1-schnell", "prompt": "a red fox in the snow", "size": "256x256"}'`,
    `  ${llmgw} ctl model add hunyuan3d-2     # image to 3D mesh, then:`,
    // The mesh goes beside the image, in the demo's folder: the line then works pasted in any folder
    // (one the user cannot write to included) and never overwrites a chair.glb of theirs.
    `    ${imageToMeshLine(demo.url, "hunyuan3d-2", demo.sampleImage, path.join(demo.dataDir, "chair.glb"))}`,
    `  ${llmgw} ctl model plan meta-llama/Llama-3.3-70B-Instruct   # does a 70B fit this fleet? (read from the demo's stand-in hub)`,
    `  ${llmgw} ctl scale qwen2.5-7b-instruct --min 2   # a second replica is placed by itself`,
    `  ${llmgw} ctl events --follow       # what the reconciler does: placed, started, ready, draining, stopped`,
    `  ${llmgw} ctl restart --model llama-3.1-8b --wait   # a new replica beside the old, then the old drains`,
    ...(first ? [`  ${llmgw} ctl logs ${first.id}`] : []),
    "",
    `The OpenAI-compatible gateway (open: no key on this loopback demo) streams from the replicas at ${demo.url}/v1:`,
    ...(first ? gatewayTryLines(demo.url, first.model) : []),
    "",
    "Ctrl-C stops the replicas, the agents and the server.",
  ].join("\n");
}

export function registerDemoCommand(program: Command): void {
  program
    .command("demo")
    .description("a server, two simulated GPU nodes and a few models, in one process tree: no GPU, nothing to configure")
    .option("--listen <host:port>", "where the server listens (a free port is used if this one is taken)", "127.0.0.1:8080")
    .option("--data-dir <dir>", "keep the demo's state, logs and model files here (default: a temporary folder, removed at the end)")
    .action(async (options: { listen: string; dataDir?: string }) => {
      print("llmgw demo: a control plane and two simulated GPU nodes on this machine (no GPU needed)\n");
      const demo = await runDemo({ listen: options.listen, dataDir: options.dataDir, say: (line) => print(`  ${line}`) });
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        print(`\n${signal}: stopping replicas, agents and server...`);
        void demo.stop().then(
          () => {
            print("Stopped.");
            process.exit(0);
          },
          (error: unknown) => {
            process.stderr.write(`error while stopping: ${(error as Error).message}\n`);
            process.exit(1);
          },
        );
      };
      // on, not once: a second Ctrl-C while stopping must not kill the demo
      // before it has stopped the agents (they are in their own process group).
      process.on("SIGINT", () => stop("Ctrl-C"));
      process.on("SIGTERM", () => stop("SIGTERM"));
      const checks: string[] = [];
      for (const replica of demo.replicas) {
        const answer = await askGateway(demo.url, replica.model).catch((error: unknown) => `no answer: ${(error as Error).message}`);
        checks.push(`Asked ${replica.model}: "${answer}"`);
      }
      print(summary(demo, checks));
    });
}
