import { Anchor, Button, FileInput, List, Stack, Table, Text, Textarea } from "@mantine/core";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { renderExport } from "../../../src/protocol/catalog-export-yaml.ts";
import { admin, send, open } from "../api.ts";
import { ChangeFlow } from "../components/ChangeFlow.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { ScrollTable } from "../components/ScrollTable.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { ShownOnce } from "../components/ShownOnce.tsx";
import { fileTime, saveFile } from "../download.ts";
import { useChangePermission } from "../session.tsx";
import type { CatalogImportResult } from "../types.ts";
import { parseYaml } from "../yaml-errors.ts";
import { useUpdates } from "../queries.ts";

/** The export and the backup hold every key's and token's name (the backup their hashes too): the server lets only admin tokens read them. */
function useAdminRead(): string | null {
  const permission = useChangePermission();
  return permission.allowed ? null : permission.reason;
}

function Reason({ reason }: { reason: string | null }) {
  if (!reason) return null;
  return (
    <Text size="sm" c="gray.8" data-testid="read-only-reason">
      {reason}
    </Text>
  );
}

/** `ctl model updates --all`: every model that follows a hub repository, and whether its branch moved on. */
function Updates() {
  const updates = useUpdates();
  const rows = [...(updates.data ?? [])].sort((left, right) => Number(right.update_available) - Number(left.update_available) || left.model.localeCompare(right.model));
  return (
    <>
      <Text size="sm" mb="xs">
        Each model whose weights follow a hub repository, against its branch&apos;s latest commit. Update one from its page (Actions, Update).
      </Text>
      <ErrorView error={updates.error} title="Could not check for updates" />
      {updates.data?.length === 0 && <Text size="sm">No model follows a hub repository.</Text>}
      {rows.length > 0 && (
        <ScrollTable label="updates" minWidth={640}>
          <Table striped data-testid="updates-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Model</Table.Th>
                <Table.Th>Repository</Table.Th>
                <Table.Th>Runs</Table.Th>
                <Table.Th>Branch</Table.Th>
                <Table.Th>Latest</Table.Th>
                <Table.Th>Update</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((row) => (
                <Table.Tr key={row.model} data-model={row.model}>
                  <Table.Td>
                    <Anchor component={Link} to={`/models/${encodeURIComponent(row.model)}`}>
                      {row.model}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{row.repository}</Table.Td>
                  <Table.Td>{row.revision}</Table.Td>
                  <Table.Td>{row.branch}</Table.Td>
                  <Table.Td>{row.latest ?? "—"}</Table.Td>
                  <Table.Td data-testid="update-available">{row.error !== null ? `unknown: ${row.error}` : row.update_available ? "yes" : "no"}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      )}
    </>
  );
}

/** `ctl export`: the same YAML, saved by the browser instead of printed. */
function Export() {
  const reason = useAdminRead();
  const download = useMutation({
    mutationFn: async () => {
      const document = await send(admin.exportCatalog());
      const text = renderExport(document);
      saveFile(`llmgw-catalog-${fileTime()}.yaml`, new Blob([text], { type: "application/yaml" }));
      return document;
    },
  });
  return (
    <Stack gap="xs" align="start">
      <Text size="sm">
        The runtime models (with the revisions each moved through), gateway keys and admin tokens, by name and limits: never a secret. Models declared in server.yaml are not in it: that file is their record.
      </Text>
      <Button variant="default" onClick={() => download.mutate()} loading={download.isPending} disabled={reason !== null} data-disabled-reason={reason ?? undefined}>
        Download the catalog (YAML)
      </Button>
      <Reason reason={reason} />
      <ErrorView error={download.error} />
      {download.data && (
        <Text size="sm" data-testid="exported">
          Saved: {download.data.models.length} model{download.data.models.length === 1 ? "" : "s"}, {download.data.keys.length} key{download.data.keys.length === 1 ? "" : "s"}, {download.data.tokens.length} token
          {download.data.tokens.length === 1 ? "" : "s"}.
        </Text>
      )}
    </Stack>
  );
}

function ImportSecrets({ result }: { result: CatalogImportResult }) {
  const secrets = [
    ...result.keys.created.filter((key) => key.key !== null).map((key) => `key ${key.name}: ${key.key ?? ""}`),
    ...result.tokens.created.filter((token) => token.token !== null).map((token) => `${token.role} token ${token.name}: ${token.token ?? ""}`),
  ];
  const names = (list: readonly string[]) => (list.length > 0 ? list.join(", ") : "none");
  return (
    <>
      <List size="sm" data-testid="import-result">
        <List.Item>Models added: {names(result.models.added)}; unchanged: {names(result.models.unchanged)}.</List.Item>
        <List.Item>Gateway keys created: {names(result.keys.created.map((key) => key.name))}; unchanged: {names(result.keys.unchanged)}.</List.Item>
        <List.Item>Tokens created: {names(result.tokens.created.map((token) => token.name))}; unchanged: {names(result.tokens.unchanged)}.</List.Item>
      </List>
      {secrets.length > 0 && <ShownOnce title="New secrets, shown this once: give each to whoever used the old one" value={secrets.join("\n")} testId="import-secrets" />}
    </>
  );
}

/** `ctl import`: an export pasted or opened from a file, its dry run (what it would add), then the import. */
function Import() {
  const [text, setText] = useState("");
  const [result, setResult] = useState<CatalogImportResult | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  const parsed = text.trim() === "" ? null : parseYaml(text);
  const request = parsed && parsed.errors.length === 0 ? admin.importCatalog(parsed.value) : null;
  return (
    <Stack gap="xs">
      <Text size="sm">
        Adds what an export holds, in one transaction: a name that is taken with other settings refuses the whole import, naming each; equal entries are left as they are. Keys and tokens get new secrets, shown once.
      </Text>
      <FileInput
        label="Open an export file"
        placeholder="Choose a .yaml file…"
        // Mantine's placeholder grey is below the contrast a label needs, and this one says what the field is.
        styles={{ placeholder: { color: "var(--mantine-color-text)" } }}
        accept=".yaml,.yml,application/yaml,text/yaml,text/plain"
        maw={420}
        clearable
        onChange={(file) => {
          setFileError(null);
          setResult(null);
          if (!file) return;
          file.text().then(setText, (error: unknown) => setFileError(`could not read ${file.name}: ${error instanceof Error ? error.message : String(error)}`));
        }}
      />
      <ErrorView error={fileError} title="Could not read the file" />
      <Textarea
        label="Or paste it here"
        autosize
        minRows={6}
        maxRows={24}
        styles={{ input: { fontFamily: "monospace", fontSize: 12 } }}
        value={text}
        onChange={(event) => {
          setText(event.currentTarget.value);
          setResult(null);
        }}
        data-testid="import-yaml"
      />
      {parsed && parsed.errors.length > 0 && (
        <List size="sm" c="red.9" data-testid="import-yaml-errors">
          {parsed.errors.map((error) => (
            <List.Item key={`${error.line}:${error.column}:${error.message}`}>
              line {error.line}, column {error.column}: {error.message}
            </List.Item>
          ))}
        </List>
      )}
      <ChangeFlow request={request} applyLabel="Import" onApplied={(answer) => setResult(answer as CatalogImportResult)} />
      {result && <ImportSecrets result={result} />}
    </Stack>
  );
}

/** `ctl backup`: the server's consistent online copy of its SQLite state, saved by the browser. */
function Backup() {
  const reason = useAdminRead();
  const backup = useMutation({
    mutationFn: async () => {
      const response = await open(admin.backup());
      const content = await response.blob();
      const name = `llmgw-${fileTime()}.db`;
      saveFile(name, content);
      return { name, bytes: content.size };
    },
  });
  return (
    <Stack gap="xs" align="start">
      <Text size="sm">
        A consistent copy of the server&apos;s whole state (catalog, nodes, usage, token and key hashes), made while it runs. Keep it where only operators can read it. To restore: stop the server, put the copy at
        &lt;data-dir&gt;/llmgw.db (remove llmgw.db-wal and llmgw.db-shm there), and start it.
      </Text>
      <Button variant="default" onClick={() => backup.mutate()} loading={backup.isPending} disabled={reason !== null} data-disabled-reason={reason ?? undefined}>
        Download a backup
      </Button>
      <Reason reason={reason} />
      <ErrorView error={backup.error} title="No backup" />
      {backup.data && (
        <Text size="sm" data-testid="backed-up">
          Saved {backup.data.name} ({backup.data.bytes.toLocaleString("en")} bytes).
        </Text>
      )}
    </Stack>
  );
}

/** The state as a whole: what `ctl model updates`, `ctl export`, `ctl import` and `ctl backup` do. */
export default function CatalogPage() {
  return (
    <>
      <PageTitle>Catalog</PageTitle>
      <SectionTitle>Updates</SectionTitle>
      <Updates />
      <SectionTitle>Export</SectionTitle>
      <Export />
      <SectionTitle>Import</SectionTitle>
      <Import />
      <SectionTitle>Backup</SectionTitle>
      <Backup />
    </>
  );
}
