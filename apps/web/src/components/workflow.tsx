import type { WorkflowRun } from '../types';

const STATUS: Record<WorkflowRun['status'], { text: string; cls: string }> = {
  success: { text: 'succeeded', cls: 'badge--on' },
  exit: { text: 'exited', cls: 'badge--off' },
  error: { text: 'failed', cls: 'badge--err' },
};

export function RunStatus({ status }: { status: WorkflowRun['status'] }) {
  const s = STATUS[status] ?? { text: status, cls: 'badge--off' };
  return <span class={`badge ${s.cls}`}>{s.text}</span>;
}
