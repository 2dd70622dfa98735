import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { isDomainError } from "../errors/domain-error.js";
import { dataDirLocation } from "./data-dir-location.js";
import { loadServerConfig } from "./server-config.js";

/** A server.yaml in its own folder, and a working directory elsewhere. */
function layout() {
  const root = temporaryDirectory("llmgw-data-dir-");
  const etc = path.join(root, "etc");
  const cwd = path.join(root, "elsewhere");
  mkdirSync(etc);
  mkdirSync(cwd);
  const configPath = path.join(etc, "server.yaml");
  writeFileSync(configPath, "data_dir: ./llmgw-data\n");
  return { etc, cwd, configPath };
}

describe("where the server keeps its state", () => {
  it("reads server.yaml's relative data_dir from the file's folder, as it reads tls paths, whatever the working directory", () => {
    const { etc, configPath } = layout();
    // The test runs in the repository's root, not in the file's folder.
    expect(loadServerConfig(configPath).dataDir).toBe(path.join(etc, "llmgw-data"));
  });

  it("reads --data-dir and the default from the working directory, as every command-line path", () => {
    const { cwd, configPath } = layout();
    expect(dataDirLocation({ flag: "state", fromFile: "./llmgw-data", configPath, label: "server.yaml", cwd })).toBe(path.join(cwd, "state"));
    expect(dataDirLocation({ flag: undefined, fromFile: undefined, configPath, label: "server.yaml", cwd })).toBe(path.join(cwd, "llmgw-data"));
  });

  it("takes an absolute data_dir as written", () => {
    const { cwd, configPath } = layout();
    expect(dataDirLocation({ flag: undefined, fromFile: "/srv/llmgw", configPath, label: "server.yaml", cwd })).toBe("/srv/llmgw");
  });

  it("refuses to start beside the file when the state is where earlier releases read it, naming both folders and both ways out", () => {
    const { etc, cwd, configPath } = layout();
    mkdirSync(path.join(cwd, "llmgw-data"));
    writeFileSync(path.join(cwd, "llmgw-data", "llmgw.db"), "");
    let refusal: unknown;
    try {
      dataDirLocation({ flag: undefined, fromFile: "./llmgw-data", configPath, label: "server.yaml", cwd });
    } catch (error) {
      refusal = error;
    }
    expect(isDomainError(refusal) && refusal.code).toBe("config_invalid");
    const { message, hint } = refusal as { message: string; hint: string };
    expect(message).toContain(path.join(etc, "llmgw-data"));
    expect(message).toContain(path.join(cwd, "llmgw-data"));
    expect(hint).toContain(`set data_dir: ${path.join(cwd, "llmgw-data")}`);
    expect(hint).toContain(`move that folder to ${path.join(etc, "llmgw-data")}`);
  });

  it("uses the folder beside the file once it holds the state, even with an old one left in the working directory", () => {
    const { etc, cwd, configPath } = layout();
    for (const folder of [path.join(cwd, "llmgw-data"), path.join(etc, "llmgw-data")]) {
      mkdirSync(folder);
      writeFileSync(path.join(folder, "admin-token"), "t\n");
    }
    expect(dataDirLocation({ flag: undefined, fromFile: "./llmgw-data", configPath, label: "server.yaml", cwd })).toBe(path.join(etc, "llmgw-data"));
  });
});
