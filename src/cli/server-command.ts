import { Option, type Command } from "commander";
import { defaultDataDir, defaultListen } from "../catalog/server-defaults.js";
import { softwareVersion } from "../protocol/api-version.js";
import { existsSync } from "node:fs";
import path from "node:path";
import { adminTokenFileName, dataDirOption } from "../server/admin-token-file.js";
import { printedLlmgwCommand } from "./invocation.js";
import { print } from "./output.js";
import { outliveClosedOutput } from "./closed-output.js";
import { addLogOptions, type LogOptions } from "./log-options.js";

export function registerServerCommand(program: Command): void {
  const command = program
    .command("server")
    .description("run the control plane, the admin API (/api/v1) and the OpenAI-compatible gateway (/v1) on one port")
    .option("-c, --config <file>", "server.yaml: declared models and settings")
    .option("--listen <host:port>", `where to listen (default ${defaultListen})`)
    .option("--data-dir <dir>", `state and the admin token (default ${defaultDataDir})`)
    // From the environment too, so a service's unit keeps the database's password off the command line.
    .addOption(new Option("--database <url>", "postgres://... to share state between servers (default: embedded SQLite in the data directory)").env("LLMGW_DATABASE"))
  addLogOptions(command, "warn")
    .action(async (options: { config?: string; listen?: string; dataDir?: string; database?: string } & LogOptions) => {
      // Warnings come later (the declared sources' checks): a reader of its output gone by then must not end the server.
      outliveClosedOutput();
      // Loaded here, not at the top: every `llmgw ctl` builds this command tree, and must not load the server to do it.
      const [{ describeStorage, startServer }, { logSettings }] = await Promise.all([import("../server/start-server.js"), import("../log-output.js")]);
      const server = await startServer({
        configPath: options.config,
        listen: options.listen,
        dataDir: options.dataDir,
        database: options.database,
        logger: logSettings(options.logLevel, options.logFormat),
      });
      const models = server.config.declared.length;
      const lines = [
        `llmgw ${softwareVersion} server listening on ${server.url}`,
        `  state:   ${describeStorage(server.config)}`,
        `  catalog: ${models} model${models === 1 ? "" : "s"} declared${server.config.configPath ? ` in ${server.config.configPath}` : " (no -c server.yaml given)"}, plus any added at runtime`,
      ];
      if (server.createdAdminToken) {
        lines.push(
          "",
          "  Admin token (shown once; it is also in the file below, readable only by you):",
          `    ${server.createdAdminToken.token}`,
          `    ${server.createdAdminToken.file}`,
        );
      }
      for (const warning of server.warnings) process.stderr.write(`\n${warning}\n\n`);
      lines.push(`  gateway: ${server.url}/v1 (OpenAI-compatible; auth ${server.config.gatewayAuth}), metrics at ${server.url}/metrics`);
      // The next step must run as printed: from this folder, with ctl finding the token by itself.
      const serverOption = server.url === `http://${defaultListen}` ? "" : ` --server ${server.url}`;
      const next = `${printedLlmgwCommand()} ctl models${serverOption}`;
      if (existsSync(path.join(server.config.dataDir, adminTokenFileName))) {
        lines.push("", `  Next: ${next}${dataDirOption(server.config.dataDir)}`);
      } else {
        // A shared Postgres set up by another server: its admin token file is on that server's machine.
        lines.push("", `  Next: ${next} --token TOKEN   (an admin token: this database's first server wrote it to its own data dir)`);
      }
      print(lines.join("\n"));
      void server.declaredSourcesChecked.then((sourceWarnings) => {
        for (const warning of sourceWarnings) process.stderr.write(`\n${warning}\n`);
      });
      const stop = () => {
        void server.close().then(() => process.exit(0));
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
}
