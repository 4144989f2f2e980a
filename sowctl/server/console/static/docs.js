// Swagger UI (from the swagger-ui-py package) on the served /openapi.json.
// The console keeps its bearer token in this tab's session storage: reuse it, so that
// "Try it out" works at once. Nothing is stored by this page itself.
"use strict";
(function () {
  const ui = window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    displayRequestDuration: true,
    validatorUrl: null, // never ask an outside validator: the page works offline
    persistAuthorization: false,
    onComplete: function () {
      let token = null;
      try {
        token = window.sessionStorage.getItem("sowctl.token");
      } catch (error) {
        token = null; // storage disabled: the user authorizes by hand
      }
      if (token) ui.preauthorizeApiKey("bearerAuth", token);
    },
  });
  window.ui = ui;
})();
