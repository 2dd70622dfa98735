import { Select } from "@mantine/core";
import { useSearchParams } from "react-router";
import { AuditTable } from "../components/AuditTable.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { PageTitle } from "../components/Section.tsx";
import { useModels, useAudit } from "../queries.ts";

export default function AuditPage() {
  const [params, setParams] = useSearchParams();
  const model = params.get("model");
  const models = useModels();
  const audit = useAudit(model ?? undefined, 200);
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
