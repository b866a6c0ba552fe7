package server

// ProcIdentity is procIdentity, for the external tests.
var ProcIdentity = procIdentity

// AccessProbe and AccessError are CheckAccess's probe script and message.
var (
	AccessProbe = accessProbe
	AccessError = accessError
)
