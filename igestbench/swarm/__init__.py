"""``sv7 swarm``: the open-loop load sweep from many client hosts, on Locust's master/worker runner.

Locust (an optional extra: ``pip install 'igestbench[distributed]'``) starts the workers, carries
messages between them and the master (ZeroMQ) and runs the users; the measurement is ours: each
worker runs ``sv7 run``'s open-loop schedule at its share of the rate, keeps HdrHistograms of
latency from the intended send time (corrected) and from the actual send (uncorrected), and the
master adds them up into one result file of the usual format.

Modules: :mod:`.command` (parser, entry; no Locust), :mod:`.messages` (what is sent, the merge;
no Locust), :mod:`.wire` (what a message may look like: every one is checked; no Locust),
:mod:`.sizing` (how many users a worker needs: Little's law; no Locust), :mod:`.record` (what
the result file records of a swarm), :mod:`.summary` (what the master prints per step and at
the end), :mod:`.workload` (the operations), :mod:`.users` (the Locust users), :mod:`.secure`
(Locust's sockets with CURVE and the checks), :mod:`.signals` (stops under gevent),
:mod:`.master`, :mod:`.worker`. Only ``sv7 swarm`` imports the last five, which bring gevent's
monkey-patching (or ZeroMQ) with them.
"""
