// How long a file request's name, content type and artifact id may be, in characters. They go
// into a header or the URL of the front's request to the runtime's file store, percent-encoded
// on its event loop (a CJK character becomes nine): a name of five million characters held the
// front ~0.5 s a request, and one call kept it so (stop 29, a third red-team pass). The front
// refuses past these (src/pool/tool-files.ts: the wall); a pack process's own code refuses
// first, before the request crosses its channel, and ctx.files says so to the handler. An
// artifact id is one segment of the store's URL: "." and ".." would name the store's own URL
// and its parent, which the URL parser resolves before the request leaves (a red-team pass,
// stop 35: the call's file token went to both). A request's number comes back in its reply: it
// must be what the SDK makes, a small counter, or a reply would carry back whatever pack code
// wrote there (up to a channel line each: 1.4 GB held by the spawner for 24 strict calls, stop 36).

export const MAX_FILE_NAME_CHARS = 1024
export const MAX_CONTENT_TYPE_CHARS = 255
export const MAX_ARTIFACT_ID_CHARS = 256

/** A request number the pack side's own code makes (a counter from 0); a request with any other is not answered. */
export function isRequestNumber(req: unknown): req is number {
  return Number.isSafeInteger(req) && (req as number) >= 0
}

/** Why a request's name, content type or id is refused; undefined if none is too long. */
export function fileRequestTooLong(request: { name?: unknown; contentType?: unknown; artifactId?: unknown }): string | undefined {
  const over = (value: unknown, max: number) => typeof value === 'string' && value.length > max
  if (over(request.name, MAX_FILE_NAME_CHARS)) return `A file name may have at most ${MAX_FILE_NAME_CHARS} characters in a pack service`
  if (over(request.contentType, MAX_CONTENT_TYPE_CHARS)) return `A file type may have at most ${MAX_CONTENT_TYPE_CHARS} characters in a pack service`
  if (over(request.artifactId, MAX_ARTIFACT_ID_CHARS)) return `An artifact id may have at most ${MAX_ARTIFACT_ID_CHARS} characters in a pack service`
  return undefined
}

/** Why an artifact id is refused (empty, or a dot segment the URL would resolve away); undefined if it is one segment of the store's URL. */
export function artifactIdRefused(artifactId: string): string | undefined {
  if (artifactId === '') return 'files.read needs an artifactId'
  if (artifactId === '.' || artifactId === '..')
    return `"${artifactId}" is no artifact id: in the file store's URL it would name the store itself or its parent`
  return undefined
}
