import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadServerConfig } from "../catalog/server-config.js";
import { DomainError } from "../errors/domain-error.js";
import { makeCa, makeServerCertificate } from "../../test/support/certificates.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { caFromOption, certificateFailure, tlsFromFlags } from "./tls-files.js";

function refusal(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("the certificate files of tls: and --tls-cert/--tls-key", () => {
  const directory = temporaryDirectory("llmgw-tls-files-");
  const ca = makeCa(directory, "ca");
  makeServerCertificate(directory, ca, "one");
  makeServerCertificate(directory, ca, "two");
  const configWith = (tls: string) => {
    const file = path.join(directory, `server-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, `tls: ${tls}\n`);
    return file;
  };

  it("reads the files beside server.yaml, whatever the working directory", () => {
    const config = loadServerConfig(configWith("{ cert: one.crt, key: one.key }"), { dataDir: path.join(directory, "data") });
    expect(config.tls?.certFile).toBe(path.join(directory, "one.crt"));
    expect(config.tls?.cert.toString()).toContain("BEGIN CERTIFICATE");
  });

  it("refuses a missing certificate file at start, naming the key and the file", () => {
    const error = refusal(() => loadServerConfig(configWith("{ cert: gone.crt, key: one.key }")));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toMatch(/^server-\w+\.yaml: tls\.cert: cannot read .*gone\.crt: no such file$/);
  });

  it("refuses a key that is not the certificate's, naming both files", () => {
    const error = refusal(() => loadServerConfig(configWith("{ cert: one.crt, key: two.key }")));
    expect(error.message).toContain(`the key in ${path.join(directory, "two.key")} (`);
    expect(error.message).toContain(`is not the key of the certificate in ${path.join(directory, "one.crt")}`);
  });

  it("refuses a file that is not a certificate", () => {
    writeFileSync(path.join(directory, "junk.crt"), "not a certificate\n");
    const error = refusal(() => loadServerConfig(configWith("{ cert: junk.crt, key: one.key }")));
    expect(error.message).toContain("tls.cert");
    expect(error.message).toContain("junk.crt");
  });

  it("refuses an unknown key under tls:", () => {
    // No setting turns verification or TLS checks off: an unknown key is a typo, refused with its place.
    const error = refusal(() => loadServerConfig(configWith("{ cert: one.crt, key: one.key, verify: false }")));
    expect(error.code).toBe("unknown_key");
    expect(`${error.message} ${JSON.stringify(error.details)}`).toContain("verify");
  });

  it("needs --tls-cert and --tls-key together", () => {
    expect(refusal(() => tlsFromFlags(path.join(directory, "one.crt"), undefined)).message).toBe("--tls-cert was given without --tls-key");
    expect(refusal(() => tlsFromFlags(undefined, path.join(directory, "one.key"))).message).toBe("--tls-key was given without --tls-cert");
    expect(tlsFromFlags(undefined, undefined)).toBeUndefined();
  });

  it("names LLMGW_CA when the CA it points at cannot be read", () => {
    expect(refusal(() => caFromOption(undefined, { LLMGW_CA: path.join(directory, "none.pem") })).message).toMatch(/^LLMGW_CA: cannot read .*none\.pem: no such file$/);
    expect(caFromOption(undefined, {})).toBeUndefined();
  });

  it("explains a certificate a client refused, and not other failures", () => {
    const failure = certificateFailure(Object.assign(new Error("fetch failed"), { cause: Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" }) }));
    expect(failure?.hint).toContain("--ca FILE");
    expect(certificateFailure(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toBeUndefined();
  });
});
