import "uplot/dist/uPlot.min.css";
import { Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import type { SeriesPoint } from "../types.ts";

type Field = Exclude<keyof SeriesPoint, "t">;

const palette = ["#1864ab", "#c92a2a", "#2b8a3e", "#862e9c"];

function seconds(t: string | number): number {
  return typeof t === "number" ? (t > 1e12 ? t / 1000 : t) : Date.parse(t) / 1000;
}

/** One chart of the last hour for some of a series' fields, drawn by uPlot (canvas, fast with thousands of points). */
export function SeriesChart({ title, points, fields, unit }: { title: string; points: readonly SeriesPoint[]; fields: readonly { field: Field; label: string }[]; unit: string }) {
  const holder = useRef<HTMLDivElement>(null);
  const { ref, width } = useElementSize();
  useEffect(() => {
    if (!holder.current || width === 0) return undefined;
    const data: uPlot.AlignedData = [points.map((point) => seconds(point.t)), ...fields.map(({ field }) => points.map((point) => point[field]))];
    const chart = new uPlot(
      {
        width: Math.floor(width),
        height: 160,
        series: [{}, ...fields.map(({ label }, index) => ({ label, stroke: palette[index % palette.length], width: 1.5, spanGaps: false }))],
        axes: [{}, { label: unit, size: 60 }],
        legend: { show: true },
      },
      data,
      holder.current,
    );
    return () => chart.destroy();
  }, [points, fields, width, unit]);
  const latest = points.at(-1);
  return (
    <div ref={ref} data-testid={`chart-${fields[0]?.field ?? "none"}`}>
      <Text fw={600} size="sm">
        {title}
        {latest ? `: ${fields.map(({ field, label }) => `${label} ${latest[field] === null ? "—" : Number(latest[field]).toFixed(1)}`).join(", ")}` : ""}
      </Text>
      <div ref={holder} role="img" aria-label={`${title} over the last hour`} />
    </div>
  );
}
