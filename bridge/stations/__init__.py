"""Point-Act across many robots: a study server and robot stations joined by Eclipse Zenoh (docs/stations.md).

``wire`` (key space, payloads, Zenoh configs), ``journal`` (a station's trials until acknowledged),
``station_node`` (the station role), ``dispatch`` (who runs on which station), ``server`` (presence,
dispatch, trials through stations, records), ``security`` (credentials and access control).
"""
