import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { loadServerConfig } from "../../src/catalog/server-config.js";
import { runCli } from "../support/processes.js";

/**
 * The Kubernetes manifests in deploy/kubernetes, rendered by kubectl's own
 * kustomize (Debian's kubernetes-client) and checked offline against the
 * Kubernetes API's schema (kubernetes-models: validators and TypeScript
 * types generated from the API's OpenAPI document). No cluster runs here:
 * the manifests are validated, not applied.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const manifests = path.join(root, "deploy/kubernetes");
const require = createRequire(path.join(root, "package.json"));

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

function render(form: string): KubeObject[] {
  const text = execFileSync("kubectl", ["kustomize", path.join(manifests, form)], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return parseAllDocuments(text).map((document) => document.toJS() as KubeObject);
}

/** The module of kubernetes-models holding an apiVersion's kinds: "apps/v1" → kubernetes-models/apps/v1, "v1" → kubernetes-models/v1. */
const modelsModule = (apiVersion: string) => `kubernetes-models/${apiVersion}`;

/** The schema's own validator (required fields, types, formats such as quantities); the message of each failure, empty when valid. */
function schemaErrors(object: KubeObject): string[] {
  const models = require(modelsModule(object.apiVersion)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = models[object.kind];
  if (!Model) return [`${object.apiVersion} has no kind ${object.kind} in the Kubernetes API`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${object.kind}/${object.metadata.name}: ${(error as Error).message}`];
  }
}

/**
 * Fields the API does not know (a typo the API server would drop with a
 * warning): the validators accept unknown keys, so each object is checked
 * as a TypeScript object literal against the API's generated interface,
 * whose excess-property check names any field the schema lacks.
 */
function unknownFieldErrors(objects: readonly KubeObject[]): string[] {
  const file = path.join(root, "rendered-manifests.check.ts");
  const lines = objects.flatMap((object, index) => [
    `import type { I${object.kind} as T${index} } from "${modelsModule(object.apiVersion)}/${object.kind}";`,
    `export const object${index}: T${index} = ${JSON.stringify(object)};`,
  ]);
  const text = lines.join("\n");
  const options: ts.CompilerOptions = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, skipLibCheck: true, types: [] };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, onError) => (path.resolve(name) === file ? ts.createSourceFile(name, text, language) : getSourceFile(name, language, onError));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line : undefined;
    const object = where !== undefined ? objects[Math.floor(where / 2)] : undefined;
    return `${object ? `${object.kind}/${object.metadata.name}: ` : ""}${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`;
  });
}

const find = (objects: readonly KubeObject[], kind: string, name: string) => {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name} among ${objects.map((object) => `${object.kind}/${object.metadata.name}`).join(", ")}`);
  return found;
};

// The shapes read below, as far as these tests look into them.
interface Container {
  name: string;
  args?: string[];
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } }[];
  resources?: { limits?: Record<string, unknown> };
}
interface PodTemplate {
  spec: { containers: Container[]; initContainers?: Container[]; volumes?: Record<string, unknown>[]; serviceAccountName?: string; nodeSelector?: Record<string, string> };
}
const podOf = (object: KubeObject) => (object.spec as { template: PodTemplate }).template.spec;
const envOf = (container: Container | undefined, name: string) => container?.env?.find((variable) => variable.name === name);

/** The --flags a container passes to llmgw, from its args (and a shell line's words). */
const flagsOf = (container: Container) => [...[...(container.command ?? []), ...(container.args ?? [])].join(" ").matchAll(/(?:^|\s)(--[a-z][a-z-]*)/g)].map((match) => match[1] as string);

async function helpOf(command: string): Promise<string> {
  const result = await runCli([command, "--help"]);
  expect(result.code).toBe(0);
  return result.stdout;
}

describe("the Kubernetes manifests, rendered with kubectl kustomize and validated against the API's schema", () => {
  const forms = { default: ".", sqlite: "sqlite", postgres: "postgres" } as const;
  const rendered = Object.fromEntries(Object.entries(forms).map(([form, folder]) => [form, render(folder)])) as Record<keyof typeof forms, KubeObject[]>;

  it.each(Object.keys(forms) as (keyof typeof forms)[])("renders the %s form into objects the Kubernetes API's schema accepts, with no field it does not know", (form) => {
    const objects = rendered[form];
    expect(objects.length).toBeGreaterThan(5);
    expect(objects.flatMap(schemaErrors)).toEqual([]);
    expect(unknownFieldErrors(objects)).toEqual([]);
    for (const object of objects.filter((each) => !["Namespace", "ClusterRole", "ClusterRoleBinding"].includes(each.kind))) expect(object.metadata.namespace).toBe("llmgw");
  });

  it("catches what it is meant to catch: a field of the wrong type, and a field the API does not know", () => {
    const agent = structuredClone(find(rendered.postgres, "DaemonSet", "llmgw-agent-gpu"));
    const broken = structuredClone(agent);
    ((broken.spec as { template: PodTemplate }).template.spec.containers[0] as Container & { image: unknown }).image = 7;
    expect(schemaErrors(broken).join("\n")).toContain("image must be string");
    const typo = structuredClone(agent);
    (typo.spec as Record<string, unknown>).updateStrateg = { type: "OnDelete" };
    expect(unknownFieldErrors([typo]).join("\n")).toContain(`'"updateStrateg"' does not exist in type 'IDaemonSetSpec'`);
  }, 60_000);

  it("applies the SQLite form by default: one server in a StatefulSet with its own volume", () => {
    expect(rendered.default.map((object) => `${object.kind}/${object.metadata.name}`).sort()).toEqual(
      rendered.sqlite.map((object) => `${object.kind}/${object.metadata.name}`).sort(),
    );
    const server = find(rendered.sqlite, "StatefulSet", "llmgw-server");
    expect(server.spec).toMatchObject({ replicas: 1, volumeClaimTemplates: [{ metadata: { name: "data" } }] });
    expect(rendered.sqlite.some((object) => object.kind === "Deployment")).toBe(false);
  });

  it("runs several Postgres servers sharing one key, with the database URL from a Secret and never on the command line", () => {
    const server = find(rendered.postgres, "Deployment", "llmgw-server");
    expect((server.spec as { replicas: number }).replicas).toBeGreaterThanOrEqual(2);
    const pod = podOf(server);
    const container = pod.containers[0] as Container;
    expect(JSON.stringify(container.args)).not.toContain("postgres://");
    expect(envOf(container, "LLMGW_SERVER_KEY")?.valueFrom?.secretKeyRef).toEqual({ name: "llmgw-server-key", key: "key" });
    expect(pod.volumes).toContainEqual({ name: "config", secret: { secretName: "llmgw-server-config" } });
    expect(rendered.postgres.some((object) => object.kind === "StatefulSet")).toBe(false);
  });

  it("runs an agent on every GPU node with its cards, the pod's own address, the join token from a Secret and the node's fabric label", () => {
    const gpu = find(rendered.postgres, "DaemonSet", "llmgw-agent-gpu");
    const pod = podOf(gpu);
    const agent = pod.containers[0] as Container;
    expect(agent.resources?.limits?.["nvidia.com/gpu"]).toBeGreaterThan(0);
    expect(envOf(agent, "POD_IP")?.valueFrom?.fieldRef?.fieldPath).toBe("status.podIP");
    expect(envOf(agent, "LLMGW_JOIN_TOKEN")?.valueFrom?.secretKeyRef).toEqual({ name: "llmgw-join", key: "token" });
    expect(agent.args?.join(" ")).toContain('--advertise "http://$POD_IP:7070"');
    expect(agent.args?.join(" ")).toContain('--fabric "$(cat /etc/llmgw-node/fabric)"');
    expect(pod.initContainers?.[0]?.args?.join("\n")).toContain('labels["llmgw.io/fabric"]');
    expect(pod.volumes).toContainEqual({ name: "weights-cache", hostPath: { path: "/var/lib/llmgw-agent", type: "DirectoryOrCreate" } });
    expect(pod.nodeSelector).toEqual({ "nvidia.com/gpu.present": "true" });

    const cpu = podOf(find(rendered.postgres, "DaemonSet", "llmgw-agent-cpu"));
    expect((cpu.containers[0] as Container).resources?.limits?.["nvidia.com/gpu"]).toBeUndefined();
    expect(cpu.nodeSelector).toEqual({ "llmgw.io/cpu-agent": "true" });
  });

  it("passes llmgw only flags its commands have", async () => {
    const [serverHelp, agentHelp] = await Promise.all([helpOf("server"), helpOf("agent")]);
    const serverFlags = [find(rendered.postgres, "Deployment", "llmgw-server"), find(rendered.sqlite, "StatefulSet", "llmgw-server")].flatMap((object) => podOf(object).containers.flatMap(flagsOf));
    const agentFlags = ["llmgw-agent-gpu", "llmgw-agent-cpu"].flatMap((name) => podOf(find(rendered.postgres, "DaemonSet", name)).containers.flatMap(flagsOf));
    expect(serverFlags).toContain("--log-level");
    expect(serverFlags.filter((flag) => !serverHelp.includes(`${flag} `))).toEqual([]);
    expect(agentFlags.length).toBeGreaterThan(4);
    expect(agentFlags.filter((flag) => !agentHelp.includes(`${flag} `))).toEqual([]);
  }, 60_000);

  it("agrees with the image deploy/image/build.sh makes: its user, its entrypoint's tini, its data directory", () => {
    // The image's build is minutes long and runs apart (.ci/image); what the manifests rely on is read from its script here.
    const script = readFileSync(path.join(root, "deploy/image/build.sh"), "utf8");
    expect(script).toContain("groupadd --gid 10001 llmgw");
    expect(script).toContain("useradd --uid 10001 --gid 10001");
    expect(script).toContain(`--entrypoint '["/usr/bin/tini", "--", "/usr/local/bin/llmgw"]'`);
    expect(script).toContain("--volume /var/lib/llmgw");
    for (const name of ["llmgw-agent-gpu", "llmgw-agent-cpu"]) {
      const pod = podOf(find(rendered.postgres, "DaemonSet", name));
      expect(pod.containers[0]?.command?.[0]).toBe("/usr/bin/tini");
      expect(pod.initContainers?.[0]?.args?.join("\n")).toContain('chownSync("/var/lib/llmgw-agent", 10001, 10001)');
    }
    for (const server of [find(rendered.postgres, "Deployment", "llmgw-server"), find(rendered.sqlite, "StatefulSet", "llmgw-server")]) {
      expect((server.spec as { template: { spec: { securityContext: Record<string, unknown> } } }).template.spec.securityContext).toMatchObject({ runAsUser: 10001, fsGroup: 10001 });
    }
  });

  it.each(["sqlite", "postgres"])("ships a %s server.yaml the server reads", (form) => {
    const config = loadServerConfig(path.join(manifests, form, "server.yaml"), {}, {});
    expect(config.listen).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(config.dataDir).toBe("/var/lib/llmgw/server");
    expect(config.database !== undefined).toBe(form === "postgres");
  });
});
