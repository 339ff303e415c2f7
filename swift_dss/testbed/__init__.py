"""The paper's testbed emulated on one machine: link shaping, time dilation, and running a
client's work in its own network namespace.

Pure settings and arithmetic live here (dilation, settings, shaping's command lines);
the namespaces themselves are made by the local cluster (swift_dss.deploy.netns).
"""
