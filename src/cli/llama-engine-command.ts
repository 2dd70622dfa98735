import type { Command } from "commander";

/**
 * `llmgw llama-engine -- LLAMA-SERVER-ARGS...`: llmgw's built-in llama.cpp
 * engine, which the agent runs in place of llama-server on a node that has
 * none, with the argv the llamacpp driver built (without argv[0]). Hidden
 * from the help: people run models with `llmgw ctl`, not this.
 */
export function registerLlamaEngineCommand(program: Command): void {
  program
    .command("llama-engine", { hidden: true })
    .summary("run llama.cpp in llmgw's own engine process, as llama-server would")
    .description("Serve llama-server's HTTP API with llama.cpp through node-llama-cpp, from llama-server's command line (everything after --).")
    .argument("[llama-server-arguments...]", "llama-server's arguments, after --")
    .allowUnknownOption(true)
    .action(async (engineArguments: string[]) => {
      // Loaded when run: the command tree is built by every `llmgw` start.
      const { runLlamaEngine } = await import("../engines/llama-process.js");
      await runLlamaEngine(engineArguments);
    });
}
