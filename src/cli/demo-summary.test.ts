import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { readAsPasted } from "../../test/support/read-as-pasted.js";
import { demoSummary, type DemoFacts } from "./demo-summary.js";

const demo: DemoFacts = {
  url: "http://127.0.0.1:8080",
  token: "llmgw_admin_0123456789abcdef",
  // A folder with a space and a quote, as a --data-dir under a desktop folder may be.
  dataDir: "/home/ada/My demo's data",
  sampleImage: "/home/ada/My demo's data/chair.png",
  replicas: [
    { id: "qwen2.5-7b-instruct-0a1b2c", model: "qwen2.5-7b-instruct", node: "gpu-node-1", gpus: [0], engine: "sim", endpoint: "http://127.0.0.1:41001" },
    { id: "llama-3.1-8b-3d4e5f", model: "llama-3.1-8b", node: "gpu-node-2", gpus: [0], engine: "sim", endpoint: "http://127.0.0.1:41002" },
    { id: "qwen3-embedding-0.6b-6a7b8c", model: "qwen3-embedding-0.6b", node: "gpu-node-2", gpus: [], engine: "sim", endpoint: null },
  ],
};

/** The "Try" part as printed: each plain-words line with the command lines under it. */
function trySteps(summary: string): { shows: string; commands: string[] }[] {
  const lines = summary.split("\n");
  const start = lines.indexOf("Try, in another terminal:");
  const steps: { shows: string; commands: string[] }[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line === "") break;
    if (line.startsWith("    ")) steps.at(-1)?.commands.push(line.trim());
    else steps.push({ shows: line, commands: [] });
  }
  return steps;
}

/** The gateway's lines, a trailing backslash joining a line to the next, as a shell reads them. */
function gatewayCommands(summary: string): string[] {
  const lines = summary.split("\n");
  const start = lines.findIndex((line) => line.startsWith("The OpenAI-compatible gateway"));
  const block = lines.slice(start + 1, lines.indexOf("", start)).join("\n");
  // The lines in words ("With the OpenAI SDK for Python (`pip install openai` first):") are read, not pasted.
  return block
    .split(/(?<!\\)\n/)
    .map((command) => command.trim())
    .filter((line) => !/^With .*:$/.test(line));
}

/** The words bash hands a command pasted as `line`, read back through printf. */
function wordsInBash(line: string): string[] {
  return execFileSync("bash", ["--norc", "-c", `printf '%s\\0' ${line}`], { encoding: "utf8" }).split("\0").slice(0, -1);
}

describe("the demo's summary, pasted into bash or zsh", () => {
  for (const llmgw of ["llmgw", "npx llmgw"]) {
    const summary = demoSummary(demo, [], llmgw);

    it(`says each thing to try in plain words on its own line, with the ${llmgw} lines to paste under it`, () => {
      const steps = trySteps(summary);
      expect(steps.length).toBeGreaterThan(5);
      for (const step of steps) {
        expect(step.shows).toMatch(/^ {2}[A-Z][^#]*:$/);
        expect(step.commands.length, step.shows).toBeGreaterThan(0);
      }
      const commands = steps.flatMap((step) => step.commands);
      expect(commands[0]).toBe(`export LLMGW_SERVER=${demo.url} LLMGW_TOKEN=${demo.token}`);
      for (const command of commands.slice(1)) expect(command).toMatch(new RegExp(`^(${llmgw} ctl |curl )`));
      expect(commands).toContain(`${llmgw} ctl logs qwen2.5-7b-instruct-0a1b2c`);
    });

    it(`prints no ${llmgw} line that zsh or bash would read differently from what it says`, () => {
      const commands = [...trySteps(summary).flatMap((step) => step.commands), ...gatewayCommands(summary)];
      expect(commands).toHaveLength(trySteps(summary).flatMap((step) => step.commands).length + 3);
      for (const command of commands) {
        expect(command).not.toMatch(/\s#/);
        expect(readAsPasted(command).hazards, command).toEqual([]);
        // bash, where # would start a comment, hands over the same words zsh would.
        expect(wordsInBash(command), command).toEqual(readAsPasted(command).words);
      }
    });
  }

  it("says what to install before each SDK line, just above it", () => {
    const lines = demoSummary(demo, [], "llmgw").split("\n").map((line) => line.trim());
    const python = lines.findIndex((line) => line.startsWith("python3 -c"));
    const node = lines.findIndex((line) => line.startsWith("node --input-type=module"));
    expect(lines[python - 1]).toBe("With the OpenAI SDK for Python (`pip install openai` first):");
    expect(lines[node - 1]).toBe("With the OpenAI SDK for Node (`npm install openai` in the folder you run it from, first):");
  });

  it("prints the console's address with the token in the URL fragment only, so it never reaches the server", () => {
    const lines = demoSummary(demo, [], "llmgw").split("\n");
    const heading = lines.findIndex((line) => line.startsWith("The web console"));
    const link = new URL(lines[heading + 1]?.trim() ?? "");
    expect(`${link.origin}${link.pathname}`).toBe(`${demo.url}/`);
    expect(link.hash).toBe(`#token=${demo.token}`);
    expect(link.search).toBe("");
  });

  it("uploads the demo's image and writes the mesh beside it, quoted as one word each", () => {
    const meshLine = trySteps(demoSummary(demo, [], "llmgw"))
      .flatMap((step) => step.commands)
      .find((command) => command.includes("/v1/llmgw/comfy/hunyuan3d-2"));
    const words = readAsPasted(meshLine ?? "").words;
    expect(words).toContain(`image=@${demo.sampleImage}`);
    expect(words.at(-1)).toBe(`${demo.dataDir}/chair.glb`);
  });
});

describe("readAsPasted catches what breaks a pasted line", () => {
  it("a trailing # comment, which zsh passes on as words", () => {
    const pasted = readAsPasted("llmgw ctl nodes                 # the simulated machines");
    expect(pasted.words).toEqual(["llmgw", "ctl", "nodes", "#", "the", "simulated", "machines"]);
    expect(pasted.hazards).toHaveLength(1);
    expect(pasted.hazards[0]).toContain("interactivecomments");
  });

  it("a # or any character inside quotes, mid-word or after a backslash is only text", () => {
    const line = `curl -d '{"a": "# b"}' x#y \\# 'e $f! *'`;
    expect(readAsPasted(line)).toEqual({ words: ["curl", "-d", '{"a": "# b"}', "x#y", "#", "e $f! *"], hazards: [] });
    expect(wordsInBash(line)).toEqual(readAsPasted(line).words);
  });

  it("globs, history expansion, =word, expansions and unclosed quotes", () => {
    expect(readAsPasted("curl http://host/v1?x=1").hazards[0]).toContain("no matches found");
    expect(readAsPasted("ls *.json").hazards[0]).toContain("glob");
    expect(readAsPasted('echo "done!"').hazards[0]).toContain("history expansion");
    expect(readAsPasted("echo hi!").hazards[0]).toContain("history expansion");
    expect(readAsPasted("echo =ls").hazards[0]).toContain("path of the command");
    expect(readAsPasted("echo $HOME").hazards[0]).toContain("expansion");
    expect(readAsPasted("echo 'open").hazards[0]).toContain("never closed");
    expect(readAsPasted('echo "open').hazards[0]).toContain("never closed");
  });

  it("a trailing backslash joins the next line, as the curl line is printed", () => {
    expect(readAsPasted("curl -sN http://x \\\n       -d '{}'")).toEqual({ words: ["curl", "-sN", "http://x", "-d", "{}"], hazards: [] });
  });
});
