"""The asyncio runtime: connections, pools, monitors, the topology, SRV polling."""
