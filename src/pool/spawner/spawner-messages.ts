// What crosses between the front and its spawner process (spawner-process.ts). Each strict
// call's process is known by the id the front gave it; its messages come back tagged with
// that id by the spawner, which tells the processes apart by their own channels. Messages for
// and from a process cross as their JSON text, never as objects: what pack code writes can nest
// deeper than V8's deserializer takes, whose throw ended the front (a red-team pass, stop 42),
// and the spawner has no need to take apart what it only passes on.
export type ToSpawner =
  /**
   * Start a process. `folder`: made (mode 0700) before it starts and removed once it has gone;
   * when it cannot be made, or was made elsewhere than in the folder `root` identifies (call-tmp.ts
   * rootIdentity), nothing starts and the exit says why. `first`: its first message (JSON text),
   * written as it starts. `endAfter`: the type of the message after which it is killed, as soon
   * as that message is on its way to the front. `types`: the types its messages may have; one of
   * another type is no message, and it is killed for it (unreadable).
   */
  | {
      t: 'start'
      id: number
      command: string
      args: string[]
      env: Record<string, string>
      folder?: string
      root?: string
      first?: string
      endAfter?: string
      types?: readonly string[]
    }
  /**
   * `text`: the message, JSON text. `ring`: a signal to send the process once it is written (its doorbell).
   * `charged`: its characters count against the process's channel rate, as what it writes does
   * (a file's bytes it asked for: the front fetched and encoded them, the spawner relays them).
   * `needsFolder`: written only while the process's folder is there; if it is gone, the process
   * is killed instead, and its exit says it never took the message (notStarted).
   */
  | { t: 'send'; id: number; text: string; ring?: NodeJS.Signals; needsFolder?: boolean; charged?: boolean }
  | { t: 'kill'; id: number }

export type FromSpawner =
  /** A process's message, as the JSON text it wrote; its first one carries the process's pid. */
  | { t: 'message'; id: number; text: string; pid?: number }
  /**
   * `unreadable`: killed for its channel: it wrote what is no message (not JSON, of a type it may not send, a line past the
   * bound), or left too much unread. `notStarted`: it never started, and why.
   */
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null; unreadable: boolean; notStarted?: string }
