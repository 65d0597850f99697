# The Debian package (`make deb`: cpack -G DEB in the build folder): the
# stripped `shoal`, `shoal-full` and `shoal-step`, the shipped data, the Prometheus rules
# and Grafana dashboards (the default install), plus what only a system
# install has: /etc/shoal's configuration and the systemd units. Those are
# the "system" component, left out of a plain `cmake --install --prefix
# DIR`, which therefore never writes outside DIR. docs/deploy.md says what
# the package does.
install(FILES deploy/etc/server.toml deploy/etc/agent.toml
        DESTINATION /etc/shoal COMPONENT system EXCLUDE_FROM_ALL)
install(FILES deploy/systemd/shoal-server.service deploy/systemd/shoal-agent.service
        DESTINATION /lib/systemd/system COMPONENT system EXCLUDE_FROM_ALL)
install(FILES docs/deploy.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Prometheus' alert rules (with their unit tests and an example scrape
# configuration) and the Grafana dashboards: docs/deploy.md, "Prometheus and Grafana".
install(FILES deploy/prometheus/shoal-alerts.yml deploy/prometheus/shoal-alerts.test.yml
              deploy/prometheus/prometheus.yml.example
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shoal/prometheus)
install(FILES deploy/grafana/shoal-cluster.json deploy/grafana/shoal-node.json
              deploy/grafana/shoal-job-efficiency.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shoal/grafana)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME shoal)
set(CPACK_PACKAGE_VENDOR "Shoal")
set(CPACK_PACKAGE_CONTACT "Shoal developers <shoal-dev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU cluster software: controller, node agent, CLI, planner, simulator, benchmarks")
set(CPACK_PACKAGE_DESCRIPTION
    "Shoal plans GPU clusters, replays job traces through its scheduler, and runs them: a \
controller (shoal server), an agent per GPU node (shoal agent) and a Slurm-style CLI.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# The shared libraries' packages come from dpkg-shlibdeps; adduser is for postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst;${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# One package of both components.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified system)
include(CPack)
