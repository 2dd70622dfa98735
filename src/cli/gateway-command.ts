import type { Command } from "commander";
import { DomainError } from "../errors/domain-error.js";
import { httpKeysBackend } from "../gateway/keys-backend.js";
import { KeysPolicy } from "../gateway/keys-policy.js";
import { openPolicy } from "../gateway/open-policy.js";
import { startGateway } from "../gateway/start-gateway.js";
import { print } from "./output.js";

interface GatewayCommandOptions {
  server?: string;
  listen: string;
  token?: string;
  auth: string;
  logLevel: string;
}

export function registerGatewayCommand(program: Command): void {
  program
    .command("gateway")
    .description("an extra, stateless OpenAI-compatible gateway that follows a server's routing table (run several behind a load balancer)")
    .option("--server <url>", "the llmgw server whose routing table to follow (env LLMGW_SERVER)")
    .option("--listen <host:port>", "where the gateway listens", "127.0.0.1:8081")
    .option("--token <token>", "an admin token: the routing table carries the replicas' keys (env LLMGW_TOKEN)")
    .option("--auth <mode>", "keys (gateway API keys) or open (no key; loopback demos only)", "keys")
    .option("--log-level <level>", "fatal, error, warn, info, debug (default warn)", "warn")
    .action(async (options: GatewayCommandOptions) => {
      const server = options.server ?? process.env.LLMGW_SERVER;
      const token = options.token ?? process.env.LLMGW_TOKEN;
      if (!server) throw new DomainError("config_invalid", "--server is missing: the gateway follows a server's routing table", "Give --server http://HOST:PORT (or set LLMGW_SERVER).");
      if (!token) throw new DomainError("config_invalid", "--token is missing: reading the routing table needs an admin token", "Give --token (or set LLMGW_TOKEN); `llmgw ctl token create NAME --role admin` makes one.");
      if (options.auth !== "keys" && options.auth !== "open") throw new DomainError("config_invalid", `--auth ${options.auth}: expected keys or open`, "Use --auth keys, or --auth open on loopback.");
      // Kept out of the environment engines or anything else this process starts would inherit.
      delete process.env.LLMGW_TOKEN;
      let running;
      let keys: KeysPolicy | undefined;
      try {
        // Keys and usage through the server's admin API: a standalone gateway has no database.
        keys =
          options.auth === "keys"
            ? await KeysPolicy.start(httpKeysBackend(server, token), {
                onBackgroundError: (error, during) => process.stderr.write(`gateway: failed ${during} (${(error as Error).message}); retrying on the next round\n`),
              })
            : undefined;
        running = await startGateway({
          server,
          token,
          listen: options.listen,
          policy: keys ?? openPolicy,
          logger: { level: options.logLevel },
        });
      } catch (error) {
        await keys?.close().catch(() => undefined);
        if (error instanceof DomainError) throw error;
        throw new DomainError(
          "server_unreachable",
          `cannot read the routing table from ${server}: ${(error as Error).message}`,
          "Check --server, and that --token is an admin token of that server.",
        );
      }
      if (options.auth === "open" && !/^(127\.|localhost|::1|\[::1\])/.test(options.listen)) {
        process.stderr.write(`\nWARNING: this gateway is OPEN (--auth open) on ${options.listen}, which is not loopback: anyone who reaches it can use every model.\n\n`);
      }
      print(`llmgw gateway listening on ${running.url} (OpenAI-compatible at ${running.url}/v1, metrics at ${running.url}/metrics), following ${server}`);
      // The usage counted since the last batch is sent after the last answer, before exiting.
      const stop = () => void running.close().then(async () => {
        await keys?.close().catch((error: unknown) => process.stderr.write(`gateway: could not send the last usage counts: ${(error as Error).message}\n`));
        process.exit(0);
      });
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
}
