package guard

// ProbeEpoch is probeEpoch, for the external tests.
var ProbeEpoch = probeEpoch
