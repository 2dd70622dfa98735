import { admin } from "../../client/index.js";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import { DomainError } from "../../errors/light.js";
import type { CatalogImportResult } from "../../protocol/index.js";
import { print, printJson } from "../output.js";
import { apiClient, ctlOptions } from "./context.js";

function importLines(result: CatalogImportResult): string[] {
  const lines: string[] = [];
  const names = (list: readonly string[]) => (list.length > 0 ? list.join(", ") : "none");
  lines.push(`Models added: ${names(result.models.added)}; unchanged: ${names(result.models.unchanged)}.`);
  lines.push(`Gateway keys created: ${names(result.keys.created.map((key) => key.name))}; unchanged: ${names(result.keys.unchanged)}.`);
  lines.push(`Tokens created: ${names(result.tokens.created.map((token) => token.name))}; unchanged: ${names(result.tokens.unchanged)}.`);
  const secrets = [
    ...result.keys.created.filter((key) => key.key !== null).map((key) => `  key ${key.name}: ${key.key}`),
    ...result.tokens.created.filter((token) => token.token !== null).map((token) => `  ${token.role} token ${token.name}: ${token.token}`),
  ];
  if (secrets.length > 0) lines.push("New secrets, shown this once (give each to whoever used the old one):", ...secrets);
  return lines;
}

export function registerStateCommands(ctl: Command): void {
  ctl
    .command("export")
    .description("print the runtime catalog, gateway keys and tokens (names and limits, never a secret) as YAML: `ctl export > catalog.yaml`")
    .option("--json", "print the API's JSON instead of YAML")
    .action(async (_options, command: Command) => {
      const document = await apiClient(ctlOptions(command)).send(admin.exportCatalog());
      if (ctlOptions(command).json) return printJson(document);
      const { renderExport } = await import("../../protocol/index.js");
      process.stdout.write(renderExport(document));
    });

  ctl
    .command("import")
    .argument("<file>", "a file `llmgw ctl export` wrote")
    .option("--json", "print the API's JSON, new secrets included")
    .description("add what an export holds, in one transaction: a name that collides refuses the whole import, naming each; equal entries are left as they are")
    .action(async (file: string, _options, command: Command) => {
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch (error) {
        throw new DomainError("invalid_input", `cannot read ${file}: ${(error as Error).message}`, "Give the path of a file `llmgw ctl export` wrote.");
      }
      const { parseExportFile } = await import("./export-file.js");
      const document = parseExportFile(text, file);
      const result = await apiClient(ctlOptions(command)).send(admin.importCatalog(document));
      if (ctlOptions(command).json) return printJson(result);
      print(importLines(result).join("\n"));
    });

  ctl
    .command("backup")
    .argument("<file>", "where to write the copy (a new file; it holds token hashes and usage, so it is made 0600)")
    .description("copy the server's SQLite state while it runs (consistent, online); restore by starting a server with the copy as <data-dir>/llmgw.db")
    .action(async (file: string, _options, command: Command) => {
      if (existsSync(file)) throw new DomainError("invalid_input", `${file} exists already`, "Give the path of a new file; a backup never overwrites one.");
      const body = await apiClient(ctlOptions(command)).stream(admin.backup());
      // Written beside the target and renamed when whole: a cut connection leaves no truncated copy under the name.
      const partial = `${file}.partial`;
      try {
        await pipeline(body, createWriteStream(partial, { flags: "wx", mode: 0o600 }));
      } catch (error) {
        if ((error as { code?: string }).code !== "EEXIST") await rm(partial, { force: true });
        throw new DomainError("invalid_input", `could not write the backup to ${file}: ${(error as Error).message}`, "Give a path in a writable folder; nothing was left under that name.");
      }
      await rename(partial, file);
      print(`Wrote a consistent copy of the server's state to ${file}. To restore: stop the server, put the copy at <data-dir>/llmgw.db (remove llmgw.db-wal and llmgw.db-shm there), and start it.`);
    });
}
