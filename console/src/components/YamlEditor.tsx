import { Button, Group, List, Loader, Text, Textarea } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ApiError, api } from "../api.ts";
import { useChangePermission } from "../session.tsx";
import type { DryRunView } from "../types.ts";
import { parseYaml, type PlacedError } from "../yaml-errors.ts";
import { ErrorView } from "./ErrorView.tsx";
import { FollowModel } from "./ChangeFlow.tsx";

/**
 * A model's YAML, checked by the server as it is typed: each pause sends the
 * entry to the add route as a dry run, so the errors are ctl's own, each put
 * on the line and column of the field it names.
 */
export function YamlEditor({ initial }: { initial: string }) {
  const permission = useChangePermission();
  const [text, setText] = useState(initial);
  const [debounced] = useDebouncedValue(text, 400);
  const parsed = parseYaml(debounced);
  const [added, setAdded] = useState<string | null>(null);
  const [addError, setAddError] = useState<unknown>(null);
  const [adding, setAdding] = useState(false);
  const check = useQuery({
    queryKey: ["validate", debounced],
    enabled: parsed.errors.length === 0 && permission.allowed,
    retry: false,
    staleTime: Infinity,
    queryFn: async (): Promise<{ ok: true; answer: DryRunView } | { ok: false; error: ApiError; placed: PlacedError[] }> => {
      try {
        const answer = await api<DryRunView>("/api/v1/models", { method: "POST", body: parsed.value, query: { dry_run: true } });
        return { ok: true, answer };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return { ok: false, error, placed: error.details.map(parsed.place) };
      }
    },
  });
  const placed = parsed.errors.length > 0 ? parsed.errors : check.data && !check.data.ok ? check.data.placed : [];
  const add = async () => {
    setAdding(true);
    setAddError(null);
    try {
      const answer = await api<{ name: string }>("/api/v1/models", { method: "POST", body: parseYaml(text).value });
      setAdded(answer.name);
    } catch (error) {
      setAddError(error);
    } finally {
      setAdding(false);
    }
  };
  const valid = text === debounced && parsed.errors.length === 0 && check.data?.ok === true;
  return (
    <>
      <Textarea
        label="Model definition (YAML)"
        value={text}
        onChange={(event) => setText(event.currentTarget.value)}
        autosize
        minRows={10}
        styles={{ input: { fontFamily: "monospace", fontSize: 13 } }}
        data-testid="yaml-editor"
        spellCheck={false}
      />
      <Group gap="xs" mt="xs">
        {check.isFetching && <Loader size="xs" aria-label="checking" />}
        <Text size="sm" data-testid="yaml-status">
          {parsed.errors.length > 0
            ? "Not valid YAML"
            : check.data?.ok
              ? `The server accepts it: ${check.data.answer.changes.map((change) => change.summary).join("; ") || "it would be added"}`
              : check.data && !check.data.ok
                ? `The server refuses it: ${check.data.error.message}`
                : "Checking with the server…"}
        </Text>
      </Group>
      {placed.length > 0 && (
        <List size="sm" data-testid="yaml-errors">
          {placed.map((error) => (
            <List.Item key={`${error.line}:${error.column}:${error.message}`}>
              line {error.line}, column {error.column} ({error.where}): {error.message}
            </List.Item>
          ))}
        </List>
      )}
      {check.data && !check.data.ok && check.data.error.hint && <Text size="sm">{check.data.error.hint}</Text>}
      <Group mt="sm">
        <Button onClick={() => void add()} disabled={!permission.allowed || !valid || adding || added !== null} loading={adding}>
          Add the model
        </Button>
        {!permission.allowed && <Text size="sm">{permission.reason}</Text>}
      </Group>
      <ErrorView error={addError} />
      {added && <FollowModel model={added} />}
    </>
  );
}
