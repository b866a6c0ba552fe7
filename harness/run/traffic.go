package run

import (
	"os"

	"github.com/ratelab/ratelab/field"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/harness/replay"
	"github.com/ratelab/ratelab/scenarios"
)

// Replay is cfg as the replay of the traffic of source (`ratelab run
// --traffic`): its algorithms, limit, cost, timeout, error policy and
// outage bound, the traffic read as opts, pipeline decisions per round
// trip. Its targets and seed play no part. The replay.Config is checked
// (replay.Config.Validate) after what a replay refuses of a run, as
// errors naming the field: "traffic" when Scenarios or ScenarioFiles are
// given (the traffic is replayed alone), "clock" when Clock is not virtual,
// "pipeline" when pipeline < 1, "limit" and "window" when Limit.Count or
// Limit.Window is zero (a traffic file has no limit of its own).
func (cfg Config) Replay(source string, pipeline int, opts scenarios.TrafficOptions) (replay.Config, error) {
	rc := replay.Config{Algorithms: cfg.Algorithms, Limit: cfg.Limit, Cost: cfg.Cost,
		Source: source, Name: "traffic", Pipeline: pipeline,
		Timeout: cfg.Timeout, AdaptTimeout: cfg.AdaptTimeout, OnError: cfg.OnError, MaxOutage: cfg.MaxOutage, Traffic: opts}
	switch {
	case len(cfg.Scenarios) > 0 || len(cfg.ScenarioFiles) > 0:
		return rc, field.Errorf("traffic", "replays the file alone; leave out the scenarios and scenario files")
	case cfg.Clock != "" && cfg.Clock != harness.VirtualClock:
		return rc, field.Errorf("clock", "traffic replays in virtual time only, got %s", cfg.Clock)
	case pipeline < 1:
		return rc, field.Errorf("pipeline", "must be >= 1, got %d", pipeline)
	case cfg.Limit.Count == 0: // a run's zero: each scenario's own
		return rc, field.Errorf("limit", "required with traffic (cost units per window per key)")
	case cfg.Limit.Window == 0:
		return rc, field.Errorf("window", "required with traffic")
	}
	return rc, rc.Validate()
}

// OpenReplay is Replay, then the traffic file source opened for reading
// (scenarios.OpenTraffic), its size in bytes in the replay.Config's Size
// (-1: unknown, standard input). The file is opened only for a good
// Config; the caller closes it. Errors are Replay's, then OpenTraffic's
// (*field.Error naming "traffic").
func (cfg Config) OpenReplay(source string, pipeline int, opts scenarios.TrafficOptions) (replay.Config, *os.File, error) {
	rc, err := cfg.Replay(source, pipeline, opts)
	if err != nil {
		return rc, nil, err
	}
	file, size, err := scenarios.OpenTraffic(source)
	rc.Size = size
	return rc, file, err
}
