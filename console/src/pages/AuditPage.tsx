import { Select } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";
import { api } from "../api.ts";
import { AuditTable } from "../components/AuditTable.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { PageTitle } from "../components/Section.tsx";
import { useModels } from "../queries.ts";
import type { AuditEventView } from "../types.ts";

export default function AuditPage() {
  const [params, setParams] = useSearchParams();
  const model = params.get("model");
  const models = useModels();
  const audit = useQuery({
    queryKey: ["audit", model ?? "all"],
    queryFn: () => api<{ events: AuditEventView[] }>("/api/v1/audit", { query: { model: model ?? undefined, limit: 200 } }).then((answer) => answer.events),
  });
  return (
    <>
      <PageTitle>Audit</PageTitle>
      <Select
        label="Model"
        clearable
        searchable
        data={(models.data ?? []).map((each) => each.name)}
        value={model}
        onChange={(value) => setParams(value ? { model: value } : {}, { replace: true })}
        w={260}
        mb="sm"
      />
      <ErrorView error={audit.error} />
      <AuditTable events={audit.data ?? []} />
    </>
  );
}
