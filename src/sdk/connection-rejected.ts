// The error a handler throws when an app refused a connection's token (protocol 2.9): the
// host answers connection-rejected and the runtime renews the token and runs the call again.
export type ConnectionRejectedError = Error & { code: 'connection-rejected'; connection: string }

export function connectionRejected(connection: string, message?: string): ConnectionRejectedError {
  const err = new Error(message ?? `The app refused the token of connection "${connection}"`) as ConnectionRejectedError
  err.name = 'ConnectionRejectedError'
  err.code = 'connection-rejected'
  err.connection = connection
  return err
}
