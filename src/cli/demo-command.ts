import type { Command } from "commander";
import type { z as Zod } from "zod";
import { printedLlmgwCommand } from "./invocation.js";
import { outliveClosedOutput, stopSignals, type StopSignal } from "./closed-output.js";
import { print } from "./output.js";

/** How each model is asked, by its preset's first task: a chat model is chatted with, an embedding model embeds. Built when the demo runs: zod would slow every other command's start. */
function questions(z: typeof Zod) {
  const chatAnswer = z.object({ choices: z.array(z.object({ message: z.object({ content: z.string() }) })).min(1) });
  const completionAnswer = z.object({ choices: z.array(z.object({ text: z.string() })).min(1) });
  const embeddingAnswer = z.object({ data: z.array(z.object({ embedding: z.array(z.number()) })).min(1) });
  return {
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
}

/** One real request through the gateway's /v1, as proof the whole path answers. */
async function askGateway(url: string, model: string): Promise<string> {
  const [{ shippedPresets }, { request }, { z }] = await Promise.all([import("../catalog/index.js"), import("undici"), import("zod")]);
  const task = shippedPresets().find((preset) => preset.name === model)?.preset.tasks[0];
  const asked = questions(z);
  const question = task === "completions" || task === "embeddings" ? asked[task] : asked.chat;
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

/** How the stop is announced: a person pressed Ctrl-C; the others are said by name. */
const signalNames: Record<StopSignal, string> = { SIGINT: "Ctrl-C", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP (the terminal closed)" };

export function registerDemoCommand(program: Command): void {
  program
    .command("demo")
    .description("a server, two simulated GPU nodes and a few models, in one process tree: no GPU, nothing to configure")
    .option("--listen <host:port>", "where the server listens (a free port is used if this one is taken)", "127.0.0.1:8080")
    .option("--data-dir <dir>", "keep the demo's state, logs and model files here (default: a temporary folder, removed at the end)")
    .option("--gguf <path>", "also serve this GGUF file for real: a CPU node of this machine runs it with llama.cpp (built into llmgw), placed by the reconciler like every model")
    .option("--large", "also two simulated nodes of 8 H100s on one fabric, which hold DeepSeek-V3 (671B) as one replica over both: the printed lines add it")
    .action(async (options: { listen: string; dataDir?: string; gguf?: string; large?: boolean }) => {
      // Its output piped into tee that Ctrl-C kills too, or a terminal closed: it still stops everything it started.
      outliveClosedOutput();
      print(
        options.gguf !== undefined
          ? "llmgw demo: a control plane, two simulated GPU nodes and a CPU node that answers for real, on this machine (no GPU needed)\n"
          : options.large === true
            ? "llmgw demo --large: a control plane and four simulated GPU nodes on this machine, two of them 8× H100 on one fabric (no GPU needed)\n"
            : "llmgw demo: a control plane and two simulated GPU nodes on this machine (no GPU needed)\n",
      );
      // Loaded when run, not at the top: every `llmgw ctl` builds this command tree, and must not load the demo to do it.
      const [{ runDemo }, { demoSummary }] = await Promise.all([import("../demo/index.js"), import("./demo-summary.js")]);
      const demo = await runDemo({ listen: options.listen, dataDir: options.dataDir, gguf: options.gguf, large: options.large, say: (line) => print(`  ${line}`) });
      let stopping = false;
      const stop = (signal: StopSignal) => {
        if (stopping) return;
        stopping = true;
        print(`\n${signalNames[signal]}: stopping replicas, agents and server...`);
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
      for (const signal of stopSignals) process.on(signal, () => stop(signal));
      const checks: string[] = [];
      for (const replica of demo.replicas) {
        const answer = await askGateway(demo.url, replica.model).catch((error: unknown) => `no answer: ${(error as Error).message}`);
        // The answer's first line says who answered what; the rest would push the commands off the screen.
        const [firstLine = "", ...rest] = answer.split("\n").filter((line) => line.trim() !== "");
        checks.push(`Asked ${replica.model}: "${firstLine}${rest.length > 0 ? " …" : ""}"`);
      }
      print(demoSummary(demo, checks, printedLlmgwCommand()));
    });
}
