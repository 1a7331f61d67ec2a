"""The conductor (seed 004): multi-worker runs of one objective. Each part has one job:

    policy        the only place the conductor calls a model: bootstrap (once per run: the objective and
                  the capabilities -> the initial agenda) and decide (the runtime state -> one typed
                  action); pure, typed outputs, typed errors
    services      the runtime mechanics: run_create; run_step (DispatchReady: every ready item dispatched
                  at once, each a Celery task; the decision only when nothing is ready or in flight);
                  capability_call_run (a worker carries a call out, CapabilityCallFinished enqueues the
                  next step); run_cancel; runs_sweep
    worker_port   a capability call -> its worker's execution (researcher: a fire with research tools;
                  terminal: the worker loop with a sandboxed shell tool); no orchestration
    worker_runtime  the worker harness: one while loop over typed actions, bounded by max_steps
    terminal      one shell command in its bubblewrap sandbox, or a refusal (never unconfined)
    cli           `fathom terminal check`: whether this machine can set the sandbox up
    capabilities  what a run may use, and the routing guidance (researcher before terminal)
    events        the run's numbered event stream (served over SSE like a session's)
    selectors     reads: a run, its events, its graph (prompt -> conductor -> workers -> tools)
    api, admin    thin: REST under /v1/runs, the operator's pages

There is no watcher: nothing here watches runs but the beat sweep of lost calls and steps."""
