// The subcommands beside `serve`, loaded only when named, and the top-level help that lists
// them. main.ts dispatches through this table and nothing else.

export type Subcommand = { run(argv: string[]): Promise<number> }

export const SUBCOMMANDS: Record<string, { summary: string; load(): Promise<Subcommand> }> = {
  check: { summary: 'check a pack as the service does at boot, and as a deploy would, without serving it', load: () => import('./check.js') },
  manifests: { summary: 'print the POST /v1/tools body (a ToolManifest) of every tool in the index', load: () => import('./manifests.js') },
  register: { summary: "register the pack's tools with a Kindgi runtime (POST /v1/tools), safe to rerun", load: () => import('./register.js') },
}

/** The serve command's flags, as every usage line shows them. */
export const SERVE_USAGE = 'kindgi-pack-host [serve] --index FILE [--module-root DIR] [--host ADDR] [--bundle-map FILE] [--watch]'

export const HELP = `Usage: ${SERVE_USAGE}
       kindgi-pack-host <command> [options]

Serves a Kindgi pack over pack protocol v2 (the default command), or works on a pack:

${Object.entries(SUBCOMMANDS)
  .map(([name, command]) => `  ${name.padEnd(10)} ${command.summary}`)
  .join('\n')}

Run "kindgi-pack-host <command> --help" for a command's options. The service's settings
(PORT, KINDGI_PACK_SERVICE_TOKEN, ...) are listed in the README.`
