import { Alert, Button, Group, List, Loader, Stack, Text } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { send, ApiError, type AdminCall } from "../api.ts";
import { modelStateText } from "../model-state.ts";
import { useModel, useReplicas } from "../queries.ts";
import { useChangePermission } from "../session.tsx";
import type { DryRunView } from "../types.ts";
import { ErrorView } from "./ErrorView.tsx";

/** A change, built by the shared admin client: sent once as a dry run, then for real. */
export type ChangeRequest = AdminCall<unknown>;

function isDryRun(answer: unknown): answer is DryRunView {
  return typeof answer === "object" && answer !== null && (answer as { dry_run?: unknown }).dry_run === true;
}

/** Follows a model after a change until every replica it wants serves (or it says why not). */
export function FollowModel({ model }: { model: string }) {
  const view = useModel(model, 1000);
  const replicas = useReplicas(model, 1000);
  if (!view.data) return <Loader size="sm" aria-label="loading the model" />;
  const state = modelStateText(view.data, replicas.data ?? []);
  const done = view.data.replicas.ready >= view.data.replicas.desired && state.group !== "starting";
  return (
    <Alert color={done ? "green" : "blue"} title={done ? "Done" : "Following the change"} data-testid="follow" styles={{ message: { color: "var(--mantine-color-text)" } }}>
      <Text size="sm" data-testid="follow-state">
        {model}: {state.text}
      </Text>
      <List size="sm" mt="xs">
        {(replicas.data ?? [])
          .filter((replica) => replica.state !== "stopped")
          .map((replica) => (
            <List.Item key={replica.id}>
              {replica.id} on {replica.node} cards {replica.gpus.join(",") || "CPU"}: {replica.state}
              {replica.progress ? ` ${Math.round(replica.progress.fraction * 100)} %` : ""}
            </List.Item>
          ))}
      </List>
    </Alert>
  );
}

/**
 * Every change the console makes goes through here: first the server's dry
 * run of it (`?dry_run=true`: the same checks, nothing written), shown as
 * the list of what would happen; then, on "Apply", the change itself; then
 * the model followed until its replicas are ready. A refusal at either step
 * is shown as the server wrote it.
 */
export function ChangeFlow({ request, follow, applyLabel = "Apply", onApplied }: { request: ChangeRequest | null; follow?: string | null; applyLabel?: string; onApplied?: (answer: unknown) => void }) {
  const permission = useChangePermission();
  const queryClient = useQueryClient();
  const [applied, setApplied] = useState(false);
  const requestKey = JSON.stringify(request);
  const preview = useMutation({
    mutationFn: (change: ChangeRequest) => send(change, { dryRun: true }),
  });
  const apply = useMutation({
    mutationFn: (change: ChangeRequest) => send(change),
    onSuccess: (answer) => {
      setApplied(true);
      void queryClient.invalidateQueries();
      onApplied?.(answer);
    },
  });
  // A new request (the form changed) starts over from its dry run.
  useEffect(() => {
    preview.reset();
    apply.reset();
    setApplied(false);
  }, [requestKey]);

  const dryRun = preview.data;
  // A change the server cannot preview (a canary start) may still be made: say so, and let Apply through.
  const unpreviewable = preview.error instanceof ApiError && preview.error.code === "dry_run_unsupported";
  const previewed = preview.isSuccess || unpreviewable;
  return (
    <Stack gap="sm">
      {!permission.allowed && (
        <Text size="sm" c="gray.8" data-testid="read-only-reason">
          {permission.reason}
        </Text>
      )}
      <Group>
        <Button variant="default" disabled={!permission.allowed || !request || preview.isPending} onClick={() => request && preview.mutate(request)}>
          Preview (dry run)
        </Button>
        <Button
          color="blue"
          disabled={!permission.allowed || !request || !previewed || apply.isPending || applied}
          title={!previewed ? "Preview the change first" : undefined}
          onClick={() => request && apply.mutate(request)}
        >
          {applyLabel}
        </Button>
        {(preview.isPending || apply.isPending) && <Loader size="sm" aria-label="waiting for the server" />}
      </Group>
      {unpreviewable ? (
        <Alert color="gray" title="No preview for this change" styles={{ message: { color: "var(--mantine-color-text)" } }}>
          {preview.error?.message}. Apply makes it.
        </Alert>
      ) : (
        <ErrorView error={preview.error} />
      )}
      {preview.isSuccess && isDryRun(dryRun) && (
        <Alert color="gray" title="Dry run: what this change would do" data-testid="dry-run" styles={{ message: { color: "var(--mantine-color-text)" } }}>
          {dryRun.changes.length === 0 ? (
            <Text size="sm">Nothing would change.</Text>
          ) : (
            <List size="sm">
              {dryRun.changes.map((change, index) => (
                <List.Item key={index}>
                  <Text span fw={600} size="sm">
                    {change.kind}
                  </Text>
                  : {change.summary}
                  {change.engine_args && change.engine_args.length > 0 && (
                    <Text size="xs" ff="monospace">
                      {change.engine_args.join(" ")}
                    </Text>
                  )}
                </List.Item>
              ))}
            </List>
          )}
          <Text size="xs" mt="xs">
            Nothing has changed yet.
          </Text>
        </Alert>
      )}
      {preview.isSuccess && !isDryRun(dryRun) && (
        <Alert color="yellow" title="This server does not preview changes" styles={{ message: { color: "var(--mantine-color-text)" } }}>
          It answered the dry run as a real call, so the change was made.
        </Alert>
      )}
      <ErrorView error={apply.error} />
      {applied && !follow && (
        <Alert color="green" title="Applied" data-testid="applied" styles={{ message: { color: "var(--mantine-color-text)" } }}>
          The server took the change.
        </Alert>
      )}
      {applied && follow && <FollowModel model={follow} />}
    </Stack>
  );
}
