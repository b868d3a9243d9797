// What crosses between the front and its spawner process (spawner-process.ts). Each strict
// call's process is known by the id the front gave it; its messages come back tagged with
// that id by the spawner, which tells the processes apart by their own IPC channels.
export type ToSpawner =
  | { t: 'start'; id: number; command: string; args: string[]; env: Record<string, string> }
  /** `ring`: a signal to send the process once the message is written (its doorbell). */
  | { t: 'send'; id: number; msg: unknown; ring?: NodeJS.Signals }
  | { t: 'kill'; id: number }

export type FromSpawner =
  | { t: 'started'; id: number; pid: number | undefined }
  | { t: 'message'; id: number; msg: unknown }
  /** `unreadable`: killed for its channel: it wrote what is no message (not JSON, a line past the bound), or left too much unread. */
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null; unreadable: boolean }
