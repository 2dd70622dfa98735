// `llmgw agent` as a real process, run from the sources through the TypeScript
// loader, with the fake engine in place of the simulated one:
//   node --import test/support/typescript-loader.mjs test/support/agent-process.ts agent --server ... 
// FAKE_ENGINE_SCRIPT names the fake engine to run.
import { Command } from "commander";
import { registerAgentCommand } from "../../src/cli/agent-command.js";
import { standInDriverFor } from "./fake-engine.js";

const engineScript = process.env.FAKE_ENGINE_SCRIPT;
if (!engineScript) throw new Error("set FAKE_ENGINE_SCRIPT to the fake engine's path");
const program = new Command("llmgw");
registerAgentCommand(program, { driverFor: standInDriverFor("vllm", []), llmgwCommand: [process.execPath, engineScript], healthPollMs: 100 });
await program.parseAsync(process.argv);
