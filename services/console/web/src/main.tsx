import { render } from "preact";
import { App } from "./app.tsx";

const root = document.getElementById("app")!;
root.textContent = ""; // the static "Loading the console…" of index.html
render(<App />, root);
