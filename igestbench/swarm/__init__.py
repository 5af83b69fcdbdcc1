"""``sv7 swarm``: the open-loop load sweep from many client hosts, on Locust's master/worker runner.

Locust (an optional extra: ``pip install 'igestbench[distributed]'``) starts the workers, carries
messages between them and the master (ZeroMQ) and runs the users; the measurement is ours: each
worker runs ``sv7 run``'s open-loop schedule at its share of the rate, keeps HdrHistograms of
latency from the intended send time (corrected) and from the actual send (uncorrected), and the
master adds them up into one result file of the usual format.

Modules: :mod:`.command` (parser, entry; no Locust), :mod:`.messages` (what is sent, the merge;
no Locust), :mod:`.workload` (the operations), :mod:`.users` (the Locust users),
:mod:`.master`, :mod:`.worker`. Only ``sv7 swarm`` imports the last three, which bring gevent's
monkey-patching with them.
"""
