package leftovers

// ProcIdentity is procIdentity, for the external tests.
var ProcIdentity = procIdentity
